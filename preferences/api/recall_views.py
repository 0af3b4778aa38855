"""One APIView per operation of the recall hook. Configs are named by registration
(``SemanticPreferenceConfig``, managed by operators); the project comes from that row.

A host token runs (recall/doctor) only configs of its own Goal or shared with its Goal;
any other config answers 404 exactly like a missing one. The scope handed to the built-in
provider is the token's Goal/Agent (an operator's run uses the config's owner Goal) —
never a field of the request body."""

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from loopx_site.core import access
from preferences import services
from preferences.api.recall_serializers import (
    SemanticPreferenceApplicationReceiptInput,
    SemanticPreferenceApplicationReceiptOutput,
    SemanticPreferenceDoctorInput,
    SemanticPreferenceDoctorOutput,
    SemanticPreferenceMaintenanceReceiptInput,
    SemanticPreferenceMaintenanceReceiptOutput,
    SemanticPreferenceRecallInput,
    SemanticPreferenceRecallOutput,
)

TAG = ["semantic preferences"]


class RecallHookApi(APIView):
    error_area = "semantic_preference"

    def config_and_scope(self, request, name):
        """The registered config this caller may run and the verified scope of the run."""
        caller = access.from_request(request, area=self.error_area)
        if caller.is_operator:
            row = services.registered_config(name)
            return row, services.scope_of(row)
        row = services.registered_config(name, goal_id=caller.goal_id, operator=False)
        return row, services.Scope(goal_id=caller.goal_id, agent_id=caller.agent_id)


class SemanticPreferenceRecallApi(RecallHookApi):
    throttle_scope = "recall"  # per token: REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]

    @extend_schema(
        operation_id="semantic_preferences_recall",
        request=SemanticPreferenceRecallInput,
        responses=SemanticPreferenceRecallOutput,
        tags=TAG,
        summary="Recall ranked preferences for a surface (preview unless execute)",
    )
    def post(self, request):
        data = SemanticPreferenceRecallInput(data=request.data)
        data.is_valid(raise_exception=True)
        row, scope = self.config_and_scope(request, data.validated_data["config"])
        return Response(
            services.recall(
                row,
                project=row.project,
                surface=data.validated_data["surface"],
                context=data.validated_data["context"],
                execute=data.validated_data["execute"],
                scope=scope,
            )
        )


class SemanticPreferenceDoctorApi(RecallHookApi):
    throttle_scope = "doctor"

    @extend_schema(
        operation_id="semantic_preferences_doctor",
        request=SemanticPreferenceDoctorInput,
        responses=SemanticPreferenceDoctorOutput,
        tags=TAG,
        summary="Check a registered config and its provider (probe only with execute)",
    )
    def post(self, request):
        data = SemanticPreferenceDoctorInput(data=request.data)
        data.is_valid(raise_exception=True)
        row, scope = self.config_and_scope(request, data.validated_data["config"])
        return Response(
            services.doctor(
                row, project=row.project, execute=data.validated_data["execute"], scope=scope
            )
        )


class SemanticPreferenceReceiptApi(RecallHookApi):
    @extend_schema(
        operation_id="semantic_preferences_receipt",
        request=SemanticPreferenceApplicationReceiptInput,
        responses=SemanticPreferenceApplicationReceiptOutput,
        tags=TAG,
        summary="Build an application receipt (returned, not written)",
    )
    def post(self, request):
        data = SemanticPreferenceApplicationReceiptInput(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(services.application_receipt(**data.validated_data))


class SemanticPreferenceMaintenanceReceiptApi(RecallHookApi):
    @extend_schema(
        operation_id="semantic_preferences_maintenance_receipt",
        request=SemanticPreferenceMaintenanceReceiptInput,
        responses=SemanticPreferenceMaintenanceReceiptOutput,
        tags=TAG,
        summary="Build a maintenance receipt (returned, not written)",
    )
    def post(self, request):
        data = SemanticPreferenceMaintenanceReceiptInput(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(services.maintenance_receipt(**data.validated_data))
