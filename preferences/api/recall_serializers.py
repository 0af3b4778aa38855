"""Input/output serializers of the recall hook API (shape checks only; the services apply
every rule, including context and surface validation)."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from loopx_site.core.api.serializers import StrictInput


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": {"type": "string"},
        "example": {"repository": "owner/repo"},
    }
)
class ContextField(serializers.JSONField):
    """``{lower_snake_key: value}``; the service rejects anything else as invalid_context."""


def _refs(max_length: int) -> serializers.ListField:
    """An optional list of provider-owned references (hashed into the receipt)."""
    return serializers.ListField(
        child=serializers.CharField(max_length=1024, trim_whitespace=False),
        required=False,
        default=list,
        max_length=max_length,
    )


def _optional_ref() -> serializers.CharField:
    return serializers.CharField(
        max_length=2048, required=False, allow_null=True, default=None, trim_whitespace=False
    )


class SemanticPreferenceRecallInput(StrictInput):
    config = serializers.CharField(
        max_length=128, trim_whitespace=False, help_text="Registered config name."
    )
    surface = serializers.CharField(max_length=128, trim_whitespace=False)
    context = ContextField(required=False, default=dict)
    execute = serializers.BooleanField(default=False)


class SemanticPreferenceDoctorInput(StrictInput):
    config = serializers.CharField(
        max_length=128, trim_whitespace=False, help_text="Registered config name."
    )
    execute = serializers.BooleanField(default=False)


class SemanticPreferenceApplicationReceiptInput(StrictInput):
    surface = serializers.CharField(max_length=128, trim_whitespace=False)
    application_id = serializers.CharField(max_length=200, trim_whitespace=False)
    outcome = serializers.CharField(
        max_length=32, trim_whitespace=False, help_text="applied | ignored | failed"
    )
    preference_refs = _refs(20)
    artifact_ref = _optional_ref()


class SemanticPreferenceMaintenanceReceiptInput(StrictInput):
    # untrimmed: the service checks the value (a blank one is its 400, as the schema says)
    trigger = serializers.CharField(
        max_length=32, trim_whitespace=False, help_text="explicit_feedback | source_truth_changed"
    )
    outcome = serializers.CharField(
        max_length=32, trim_whitespace=False, help_text="verified | no_write_rationale | failed"
    )
    corpus_ids = serializers.ListField(
        child=serializers.CharField(max_length=128, trim_whitespace=False),
        min_length=1,
        max_length=32,
    )
    scope_refs = _refs(32)
    evidence_ref = _optional_ref()


class SemanticPreferenceItemOutput(serializers.Serializer):
    """A provider item, passed through: these two fields plus any the provider added."""

    preference_ref = serializers.CharField()
    summary = serializers.CharField()


class SemanticPreferenceProviderOutput(serializers.Serializer):
    source = serializers.CharField(help_text="extension | argv")
    provider_id = serializers.CharField(allow_null=True)
    extension_id = serializers.CharField(allow_null=True)
    timeout_seconds = serializers.IntegerField()
    doctor = serializers.BooleanField()


class SemanticPreferenceProviderRequestOutput(serializers.Serializer):
    """``semantic_preference_provider_request_v0``: exactly what the provider receives."""

    schema_version = serializers.CharField()
    surface = serializers.CharField()
    query = serializers.CharField()
    limit = serializers.IntegerField()
    context = ContextField()


class SemanticPreferenceCorpusOutput(serializers.Serializer):
    corpus_id = serializers.CharField()
    scope_ref = serializers.CharField()
    read_role = serializers.CharField(help_text="primary | fallback | reference")
    write_mode = serializers.CharField(help_text="read_only | provider_managed")
    write_actor_ref = serializers.CharField(allow_null=True)
    source_of_truth = serializers.CharField()
    writeback_triggers = serializers.ListField(child=serializers.CharField())
    closure_policy = serializers.CharField(help_text="none | write_wait_l2_read_scoped_recall")


class SemanticPreferenceGuidanceOutput(serializers.Serializer):
    schema_version = serializers.CharField(help_text="semantic_preference_maintenance_guidance_v0")
    corpus_ids = serializers.ListField(child=serializers.CharField())
    writeback_triggers = serializers.ListField(child=serializers.CharField())
    closure_outcomes = serializers.ListField(child=serializers.CharField())
    completion = serializers.CharField()


class SemanticPreferenceRecallOutput(serializers.Serializer):
    ok = serializers.BooleanField()
    schema_version = serializers.CharField(help_text="semantic_preference_recall_v0")
    status = serializers.CharField(
        help_text="preview_ready | completed | provider_unavailable | disabled"
    )
    surface = serializers.CharField()
    request = SemanticPreferenceProviderRequestOutput(
        required=False, help_text="Preview only: the provider request."
    )
    items = SemanticPreferenceItemOutput(many=True)
    truncated = serializers.BooleanField()
    corpus_inventory = SemanticPreferenceCorpusOutput(
        many=True, required=False, help_text="Completed only; [] when the provider sent none."
    )
    maintenance_guidance = SemanticPreferenceGuidanceOutput(
        required=False, allow_null=True, help_text="Completed only; null without writable corpora."
    )
    failure_kind = serializers.CharField(allow_null=True)
    failure_policy = serializers.CharField(allow_null=True)
    limit = serializers.IntegerField(allow_null=True)
    provider = SemanticPreferenceProviderOutput(allow_null=True)


class SemanticPreferenceSetupHintsOutput(serializers.Serializer):
    install = serializers.CharField(required=False)
    configure = serializers.CharField(required=False)


class SemanticPreferenceDoctorConfigOutput(serializers.Serializer):
    valid = serializers.BooleanField()
    enabled = serializers.BooleanField()
    surfaces = serializers.ListField(child=serializers.CharField())


class SemanticPreferenceDoctorOutput(serializers.Serializer):
    ok = serializers.BooleanField()
    schema_version = serializers.CharField(help_text="semantic_preference_provider_doctor_v0")
    status = serializers.CharField(
        help_text="disabled | probe_required | ready | provider_missing | provider_unavailable"
    )
    provider_id = serializers.CharField(allow_null=True)
    available = serializers.BooleanField()
    verified = serializers.BooleanField()
    probe_configured = serializers.BooleanField()
    failure_kind = serializers.CharField(allow_null=True)
    setup_hints = SemanticPreferenceSetupHintsOutput()
    automatic_setup_performed = serializers.BooleanField()
    credential_writes_performed = serializers.BooleanField()
    service_writes_performed = serializers.BooleanField()
    external_writes_performed = serializers.BooleanField()
    config = SemanticPreferenceDoctorConfigOutput()
    provider = SemanticPreferenceProviderOutput(allow_null=True)


class SemanticPreferenceApplicationReceiptOutput(serializers.Serializer):
    schema_version = serializers.CharField(help_text="semantic_preference_application_receipt_v0")
    surface = serializers.CharField()
    application_id = serializers.CharField()
    outcome = serializers.CharField()
    artifact_ref = serializers.CharField(allow_null=True)
    preference_ref_digests = serializers.ListField(child=serializers.CharField())


class SemanticPreferenceMaintenanceReceiptOutput(serializers.Serializer):
    schema_version = serializers.CharField(help_text="semantic_preference_maintenance_receipt_v0")
    trigger = serializers.CharField()
    outcome = serializers.CharField()
    corpus_ids = serializers.ListField(child=serializers.CharField())
    evidence_ref = serializers.CharField(allow_null=True)
    scope_ref_digests = serializers.ListField(child=serializers.CharField())
