"""One APIView per operation of the recall hook. Configs are named by registration
(``SemanticPreferenceConfig``, managed by operators); the project comes from that row.

A host token runs (recall/doctor) only configs of its own Goal or shared with its Goal;
any other config answers 404 exactly like a missing one. The scope handed to the built-in
provider is the token's Goal/Agent (an operator's run uses the config's owner Goal) —
never a field of the request body."""

from drf_spectacular.utils import extend_schema_view
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
from preferences.api.schema import operation_schema

TAG = ["semantic preferences"]


class RecallHookApi(APIView):
    """POST ``input_class`` → ``run(request, validated data)`` → its document."""

    error_area = "semantic_preference"
    input_class = None
    # The service the validated fields are handed to (a subclass sets it).
    service = None

    def post(self, request):
        data = self.input_class(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(self.run(request, dict(data.validated_data)))

    def run(self, request, data: dict):
        return self.service(**data)

    def config_and_scope(self, request, name):
        """The registered config this caller may run and the verified scope of the run."""
        caller = access.from_request(request, area=self.error_area)
        if caller.is_operator:
            row = services.registered_config(name)
            return row, services.scope_of(row)
        row = services.registered_config(name, goal_id=caller.goal_id, operator=False)
        return row, services.Scope(goal_id=caller.goal_id, agent_id=caller.agent_id)


def operation(operation_id: str, request, responses, summary: str):
    """Document the view's POST and take its body with ``request``."""

    def decorate(view):
        view.input_class = request
        schema = operation_schema(operation_id, summary, responses, TAG, request=request)
        return extend_schema_view(post=schema)(view)

    return decorate


class ConfigRunApi(RecallHookApi):
    # Runs the registered ``config`` the caller may run, on the run's verified scope.
    def run(self, request, data):
        row, scope = self.config_and_scope(request, data.pop("config"))
        return self.service(row, project=row.project, scope=scope, **data)


@operation(
    "semantic_preferences_recall",
    SemanticPreferenceRecallInput,
    SemanticPreferenceRecallOutput,
    "Recall ranked preferences for a surface (preview unless execute)",
)
class SemanticPreferenceRecallApi(ConfigRunApi):
    throttle_scope = "recall"  # per token: REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    service = staticmethod(services.recall)


@operation(
    "semantic_preferences_doctor",
    SemanticPreferenceDoctorInput,
    SemanticPreferenceDoctorOutput,
    "Check a registered config and its provider (probe only with execute)",
)
class SemanticPreferenceDoctorApi(ConfigRunApi):
    throttle_scope = "doctor"
    service = staticmethod(services.doctor)


@operation(
    "semantic_preferences_receipt",
    SemanticPreferenceApplicationReceiptInput,
    SemanticPreferenceApplicationReceiptOutput,
    "Build an application receipt (returned, not written)",
)
class SemanticPreferenceReceiptApi(RecallHookApi):
    service = staticmethod(services.application_receipt)


@operation(
    "semantic_preferences_maintenance_receipt",
    SemanticPreferenceMaintenanceReceiptInput,
    SemanticPreferenceMaintenanceReceiptOutput,
    "Build a maintenance receipt (returned, not written)",
)
class SemanticPreferenceMaintenanceReceiptApi(RecallHookApi):
    service = staticmethod(services.maintenance_receipt)
