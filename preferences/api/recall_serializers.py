"""Input/output serializers of the recall hook API (shape checks only; the services apply
every rule, including context and surface validation)."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": {"type": "string"},
        "example": {"repository": "owner/repo"},
    }
)
class ContextField(serializers.JSONField):
    """``{lower_snake_key: value}``; the service rejects anything else as invalid_context."""


class SemanticPreferenceRecallInput(serializers.Serializer):
    config = serializers.CharField(max_length=128, help_text="Registered config name.")
    surface = serializers.CharField(max_length=128, trim_whitespace=False)
    context = ContextField(required=False, default=dict)
    execute = serializers.BooleanField(default=False)


class SemanticPreferenceDoctorInput(serializers.Serializer):
    config = serializers.CharField(max_length=128, help_text="Registered config name.")
    execute = serializers.BooleanField(default=False)


class SemanticPreferenceApplicationReceiptInput(serializers.Serializer):
    surface = serializers.CharField(max_length=128, trim_whitespace=False)
    application_id = serializers.CharField(max_length=128, trim_whitespace=False)
    outcome = serializers.CharField(max_length=32, help_text="applied | ignored | failed")
    preference_refs = serializers.ListField(
        child=serializers.CharField(max_length=1024, trim_whitespace=False),
        min_length=1,
        max_length=20,
    )
    artifact_ref = serializers.CharField(
        max_length=2048, required=False, allow_null=True, default=None, trim_whitespace=False
    )


class SemanticPreferenceMaintenanceReceiptInput(serializers.Serializer):
    trigger = serializers.CharField(
        max_length=32, help_text="explicit_feedback | source_truth_changed"
    )
    outcome = serializers.CharField(max_length=32, help_text="verified | no_write_rationale")
    corpus_ids = serializers.ListField(
        child=serializers.CharField(max_length=128, trim_whitespace=False),
        min_length=1,
        max_length=32,
    )
    scope_refs = serializers.ListField(
        child=serializers.CharField(max_length=1024, trim_whitespace=False),
        required=False,
        default=list,
        max_length=32,
    )
    evidence_ref = serializers.CharField(
        max_length=2048, required=False, allow_null=True, default=None, trim_whitespace=False
    )


class SemanticPreferenceItemOutput(serializers.Serializer):
    preference_ref = serializers.CharField()
    summary = serializers.CharField()


class SemanticPreferenceProviderOutput(serializers.Serializer):
    source = serializers.CharField(help_text="extension | argv")
    provider_id = serializers.CharField(allow_null=True)
    extension_id = serializers.CharField(allow_null=True)
    timeout_seconds = serializers.IntegerField()
    doctor = serializers.BooleanField()


class SemanticPreferenceGuidanceCorpusOutput(serializers.Serializer):
    corpus_id = serializers.CharField()
    read_role = serializers.CharField()
    write_mode = serializers.CharField()
    source_of_truth = serializers.CharField()
    writeback_triggers = serializers.ListField(child=serializers.CharField())
    closure_policy = serializers.CharField()
    scope_ref_digests = serializers.ListField(child=serializers.CharField())


class SemanticPreferenceGuidanceOutput(serializers.Serializer):
    schema_version = serializers.CharField()
    corpora = SemanticPreferenceGuidanceCorpusOutput(many=True)
    triggers = serializers.ListField(child=serializers.CharField())
    outcomes = serializers.ListField(child=serializers.CharField())
    instructions = serializers.ListField(child=serializers.CharField())


class SemanticPreferenceRecallOutput(serializers.Serializer):
    schema_version = serializers.CharField()
    status = serializers.CharField(
        help_text="preview_ready | completed | provider_unavailable | disabled"
    )
    surface = serializers.CharField()
    failure_policy = serializers.CharField(allow_null=True)
    limit = serializers.IntegerField(allow_null=True)
    provider = SemanticPreferenceProviderOutput(allow_null=True)
    items = SemanticPreferenceItemOutput(many=True)
    truncated = serializers.BooleanField()
    failure_kind = serializers.CharField(allow_null=True)
    maintenance_guidance = SemanticPreferenceGuidanceOutput(required=False)


class SemanticPreferenceDoctorConfigOutput(serializers.Serializer):
    valid = serializers.BooleanField()
    enabled = serializers.BooleanField()
    surfaces = serializers.ListField(child=serializers.CharField())


class SemanticPreferenceDoctorOutput(serializers.Serializer):
    schema_version = serializers.CharField()
    status = serializers.CharField(
        help_text="disabled | preview_ready | healthy | unhealthy | unavailable | no_probe"
    )
    config = SemanticPreferenceDoctorConfigOutput()
    provider = SemanticPreferenceProviderOutput(allow_null=True)
    failure_kind = serializers.CharField(allow_null=True)
    setup_hints = serializers.ListField(child=serializers.CharField())


class SemanticPreferenceApplicationReceiptOutput(serializers.Serializer):
    schema_version = serializers.CharField()
    surface = serializers.CharField()
    application_id = serializers.CharField()
    outcome = serializers.CharField()
    artifact_ref = serializers.CharField(allow_null=True)
    preference_ref_digests = serializers.ListField(child=serializers.CharField())


class SemanticPreferenceMaintenanceReceiptOutput(serializers.Serializer):
    schema_version = serializers.CharField()
    trigger = serializers.CharField()
    outcome = serializers.CharField()
    corpus_ids = serializers.ListField(child=serializers.CharField())
    evidence_ref = serializers.CharField(allow_null=True)
    scope_ref_digests = serializers.ListField(child=serializers.CharField())
