"""One explicit view per operation of the recall hook (``DocumentApi``, like
``hooks/api/views.py``). Configs are named by registration (``SemanticPreferenceConfig``,
managed by operators); the project comes from that row.

A host token runs (recall/doctor) only configs of its own Goal or shared with its Goal;
any other config answers 404 exactly like a missing one. The scope handed to the built-in
provider is the token's Goal/Agent (an operator's run uses the config's owner Goal) —
never a field of the request body (``services.runnable_config``)."""

from loopx_site.core.api.base import DocumentApi
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
from preferences.documents import recall as recall_documents

TAG = ["semantic preferences"]
#: Every recall-hook operation's description in the OpenAPI schema.
DESCRIPTION = "POST ``input_class`` → ``run(request, validated data)`` → its document."


def hook_schema(operation_id: str, request, responses, summary: str):
    """The OpenAPI operation of one recall-hook view's POST."""
    return operation_schema(
        operation_id, summary, responses, TAG, request=request, description=DESCRIPTION
    )


class RecallHookApi(DocumentApi):
    # (No docstring: drf-spectacular would publish it as the operations' description.)
    error_area = "semantic_preference"


class SemanticPreferenceRecallApi(RecallHookApi):
    throttle_scope = "recall"  # per token: REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]

    @hook_schema(
        "semantic_preferences_recall",
        SemanticPreferenceRecallInput,
        SemanticPreferenceRecallOutput,
        "Recall ranked preferences for a surface (preview unless execute)",
    )
    def post(self, request):
        values = self.parse(SemanticPreferenceRecallInput, request.data)
        row, scope = services.runnable_config(self.caller(request), values.pop("config"))
        result = services.recall(row, project=row.project, scope=scope, **values)
        return self.document(recall_documents.recall(result))


class SemanticPreferenceDoctorApi(RecallHookApi):
    throttle_scope = "doctor"

    @hook_schema(
        "semantic_preferences_doctor",
        SemanticPreferenceDoctorInput,
        SemanticPreferenceDoctorOutput,
        "Check a registered config and its provider (probe only with execute)",
    )
    def post(self, request):
        values = self.parse(SemanticPreferenceDoctorInput, request.data)
        row, scope = services.runnable_config(self.caller(request), values.pop("config"))
        result = services.doctor(row, project=row.project, scope=scope, **values)
        return self.document(recall_documents.doctor(result))


class SemanticPreferenceReceiptApi(RecallHookApi):
    @hook_schema(
        "semantic_preferences_receipt",
        SemanticPreferenceApplicationReceiptInput,
        SemanticPreferenceApplicationReceiptOutput,
        "Build an application receipt (returned, not written)",
    )
    def post(self, request):
        values = self.parse(SemanticPreferenceApplicationReceiptInput, request.data)
        fields = services.application_receipt(**values)
        return self.document(recall_documents.application_receipt(**fields))


class SemanticPreferenceMaintenanceReceiptApi(RecallHookApi):
    @hook_schema(
        "semantic_preferences_maintenance_receipt",
        SemanticPreferenceMaintenanceReceiptInput,
        SemanticPreferenceMaintenanceReceiptOutput,
        "Build a maintenance receipt (returned, not written)",
    )
    def post(self, request):
        values = self.parse(SemanticPreferenceMaintenanceReceiptInput, request.data)
        fields = services.maintenance_receipt(**values)
        return self.document(recall_documents.maintenance_receipt(**fields))
