"""One APIView per operation on the explicit preference journal; each returns the same
LoopX document as the CLI (``preferences.documents``). The URL's goal/agent must be
inside the host token's scope (checked by the default permission)."""

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from preferences import documents, services
from preferences.api.serializers import (
    ConflictOutput,
    HistoryOutput,
    HistoryQuery,
    ObserveOutput,
    ReadOutput,
    RememberInput,
    RetireInput,
    WriteOutput,
)

TAG = ["preferences"]
# Every other error response is the shared envelope, added by the central schema.
READ_ERRORS: dict = {}
WRITE_ERRORS = {409: ConflictOutput}


class PreferenceApi(APIView):
    error_area = "semantic_preference"


class PreferenceReadApi(PreferenceApi):
    @extend_schema(
        operation_id="preferences_read",
        responses={200: ReadOutput, **READ_ERRORS},
        tags=TAG,
        summary="Read the exact scope's current view (agent_preferences_v1)",
    )
    def get(self, request, goal_id: str, agent_id: str):
        return Response(
            documents.respond(
                documents.read, lambda: services.read(goal_id=goal_id, agent_id=agent_id)
            )
        )


class PreferenceObserveApi(PreferenceApi):
    @extend_schema(
        operation_id="preferences_observe",
        responses={200: ObserveOutput, **READ_ERRORS},
        tags=TAG,
        summary="Content-free observation: absent, or observed with a count",
    )
    def get(self, request, goal_id: str, agent_id: str):
        return Response(
            documents.respond(
                documents.observe, lambda: services.observe(goal_id=goal_id, agent_id=agent_id)
            )
        )


def _write_response(document):
    return Response(document, status=201 if document["status"] == "applied" else 200)


class PreferenceRememberApi(PreferenceApi):
    throttle_scope = "write"

    @extend_schema(
        operation_id="preferences_remember",
        request=RememberInput,
        responses={200: WriteOutput, 201: WriteOutput, **WRITE_ERRORS},
        tags=TAG,
        summary="Remember or correct a preference (preview unless execute; 201 when applied)",
    )
    def post(self, request, goal_id: str, agent_id: str):
        data = RememberInput(data=request.data)
        data.is_valid(raise_exception=True)
        return _write_response(
            documents.respond(
                documents.write,
                lambda: services.remember(
                    goal_id=goal_id, agent_id=agent_id, **data.validated_data
                ),
            )
        )


class PreferenceRetireApi(PreferenceApi):
    throttle_scope = "write"

    @extend_schema(
        operation_id="preferences_retire",
        request=RetireInput,
        responses={200: WriteOutput, 201: WriteOutput, **WRITE_ERRORS},
        tags=TAG,
        summary="Retire a preference, leaving a tombstone (preview unless execute)",
    )
    def post(self, request, goal_id: str, agent_id: str):
        data = RetireInput(data=request.data)
        data.is_valid(raise_exception=True)
        return _write_response(
            documents.respond(
                documents.write,
                lambda: services.retire(goal_id=goal_id, agent_id=agent_id, **data.validated_data),
            )
        )


class PreferenceHistoryApi(PreferenceApi):
    @extend_schema(
        operation_id="preferences_history",
        parameters=[HistoryQuery],
        responses={200: HistoryOutput, **READ_ERRORS},
        tags=TAG,
        summary="Page through the journal (events of agent_preference_changed_v1)",
    )
    def get(self, request, goal_id: str, agent_id: str):
        query = HistoryQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(
            documents.respond(
                documents.history,
                lambda: services.history(
                    goal_id=goal_id, agent_id=agent_id, **query.validated_data
                ),
            )
        )
