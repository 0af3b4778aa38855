"""This service as a remote semantic preference provider (``preferences.recall.remote``):
the endpoints the shipped LoopX extension ``loopx-memory-remote`` calls with a host
token. The config must be one the token may run (another Goal's answers 404 like a
missing one); its project scopes the ranking."""

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

from loopx_site.core.api.serializers import StrictInput
from preferences import services
from preferences.api.recall_views import RecallHookApi, hook_schema
from preferences.recall import remote


class ProviderDoctorInput(StrictInput):
    config = serializers.CharField(max_length=128, help_text="Registered config name.")


class ProviderRequestInput(ProviderDoctorInput):
    request = serializers.DictField(
        help_text="One semantic_preference_provider_request_v0 object, as LoopX sends it."
    )


class SemanticPreferenceProviderApi(RecallHookApi):
    throttle_scope = "recall"

    @hook_schema(
        "semantic_preferences_provider",
        ProviderRequestInput,
        OpenApiResponse(description="One semantic_preference_provider_response_v0."),
        "Answer a provider request (the loopx-memory-remote extension)",
    )
    def post(self, request):
        values = self.parse(ProviderRequestInput, request.data)
        row, _ = services.runnable_config(self.caller(request), values["config"])
        return self.document(remote.answer(row, values["request"]))


class SemanticPreferenceProviderDoctorApi(RecallHookApi):
    throttle_scope = "doctor"

    @hook_schema(
        "semantic_preferences_provider_doctor",
        ProviderDoctorInput,
        OpenApiResponse(description="The provider's read-only health report."),
        "The remote provider's health for a config's project",
    )
    def post(self, request):
        values = self.parse(ProviderDoctorInput, request.data)
        row, _ = services.runnable_config(self.caller(request), values["config"])
        return self.document(remote.health(row))
