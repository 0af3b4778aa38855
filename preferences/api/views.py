"""One APIView per operation on the explicit preference journal. The URL's goal/agent
must be inside the host token's scope (checked by the default permission)."""

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from preferences import services
from preferences.api.serializers import (
    HistoryOutput,
    HistoryQuery,
    ReceiptOutput,
    RememberInput,
    RetireInput,
    ViewOutput,
)

TAG = ["preferences"]


class PreferenceApi(APIView):
    error_area = "semantic_preference"


class PreferenceReadApi(PreferenceApi):
    @extend_schema(
        operation_id="preferences_read",
        responses=ViewOutput,
        tags=TAG,
        summary="Read the exact scope's current view",
    )
    def get(self, request, goal_id: str, agent_id: str):
        return Response(services.read(goal_id=goal_id, agent_id=agent_id))


class PreferenceRememberApi(PreferenceApi):
    @extend_schema(
        operation_id="preferences_remember",
        request=RememberInput,
        responses=ReceiptOutput,
        tags=TAG,
        summary="Remember or correct a preference (preview unless execute)",
    )
    def post(self, request, goal_id: str, agent_id: str):
        data = RememberInput(data=request.data)
        data.is_valid(raise_exception=True)
        receipt = services.remember(goal_id=goal_id, agent_id=agent_id, **data.validated_data)
        return Response(receipt, status=201 if receipt["status"] == "committed" else 200)


class PreferenceRetireApi(PreferenceApi):
    @extend_schema(
        operation_id="preferences_retire",
        request=RetireInput,
        responses=ReceiptOutput,
        tags=TAG,
        summary="Retire a preference, leaving a tombstone (preview unless execute)",
    )
    def post(self, request, goal_id: str, agent_id: str):
        data = RetireInput(data=request.data)
        data.is_valid(raise_exception=True)
        receipt = services.retire(goal_id=goal_id, agent_id=agent_id, **data.validated_data)
        return Response(receipt, status=201 if receipt["status"] == "committed" else 200)


class PreferenceHistoryApi(PreferenceApi):
    @extend_schema(
        operation_id="preferences_history",
        parameters=[HistoryQuery],
        responses=HistoryOutput,
        tags=TAG,
        summary="Page through the journal",
    )
    def get(self, request, goal_id: str, agent_id: str):
        query = HistoryQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(
            services.history(goal_id=goal_id, agent_id=agent_id, **query.validated_data)
        )
