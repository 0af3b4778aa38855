"""This service as a remote semantic preference provider (``preferences.recall.remote``):
the endpoints the shipped LoopX extension ``loopx-memory-remote`` calls with a host
token. The config must be one the token may run (another Goal's answers 404 like a
missing one); its project scopes the ranking."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from preferences.api.recall_views import TAG, RecallHookApi
from preferences.recall import remote


class ProviderRequestInput(serializers.Serializer):
    config = serializers.CharField(max_length=128, help_text="Registered config name.")
    request = serializers.DictField(
        help_text="One semantic_preference_provider_request_v0 object, as LoopX sends it."
    )


class ProviderDoctorInput(serializers.Serializer):
    config = serializers.CharField(max_length=128, help_text="Registered config name.")


class SemanticPreferenceProviderApi(RecallHookApi):
    throttle_scope = "recall"

    @extend_schema(
        operation_id="semantic_preferences_provider",
        request=ProviderRequestInput,
        responses=OpenApiResponse(description="One semantic_preference_provider_response_v0."),
        tags=TAG,
        summary="Answer a provider request (the loopx-memory-remote extension)",
    )
    def post(self, request):
        data = ProviderRequestInput(data=request.data)
        data.is_valid(raise_exception=True)
        row, _ = self.config_and_scope(request, data.validated_data["config"])
        return Response(remote.answer(row, data.validated_data["request"]))


class SemanticPreferenceProviderDoctorApi(RecallHookApi):
    throttle_scope = "doctor"

    @extend_schema(
        operation_id="semantic_preferences_provider_doctor",
        request=ProviderDoctorInput,
        responses=OpenApiResponse(description="The provider's read-only health report."),
        tags=TAG,
        summary="The remote provider's health for a config's project",
    )
    def post(self, request):
        data = ProviderDoctorInput(data=request.data)
        data.is_valid(raise_exception=True)
        row, _ = self.config_and_scope(request, data.validated_data["config"])
        return Response(remote.health(row))
