"""Input/output serializers of the explicit preference API (shape checks only; the
service applies every rule)."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from loopx_site.core.api.schema import ErrorEnvelope
from loopx_site.core.api.serializers import OpaqueStringField, StrictInput


@extend_schema_field({"type": "string", "nullable": True, "example": "3"})
class ExpectedRevisionField(OpaqueStringField):
    """``null``/``"none"`` or the opaque revision string read back (``"3"``); a number
    is ``invalid_argument`` (the revision is opaque: echoed, never computed)."""

    def __init__(self, **kwargs):
        super().__init__(what="expected_revision", **kwargs)


class RememberInput(StrictInput):
    key = serializers.CharField(max_length=128, trim_whitespace=False)
    statement = serializers.CharField(max_length=1200, trim_whitespace=False)
    source_ref = serializers.CharField(max_length=1024, trim_whitespace=False)
    source_quote = serializers.CharField(max_length=1600, trim_whitespace=False)
    expected_revision = ExpectedRevisionField(allow_null=True)
    operation_id = serializers.CharField(max_length=128, trim_whitespace=False)
    expires_at = serializers.CharField(required=False, allow_null=True, default=None)
    execute = serializers.BooleanField(default=False)


class RetireInput(StrictInput):
    key = serializers.CharField(max_length=128, trim_whitespace=False)
    source_ref = serializers.CharField(max_length=1024, trim_whitespace=False)
    source_quote = serializers.CharField(max_length=1600, trim_whitespace=False)
    expected_revision = ExpectedRevisionField(allow_null=True)
    operation_id = serializers.CharField(max_length=128, trim_whitespace=False)
    execute = serializers.BooleanField(default=False)


class HistoryQuery(serializers.Serializer):
    after_cursor = serializers.CharField(required=False, allow_blank=False, max_length=200)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=200, default=20)


# -- LoopX's documents (``preferences.documents``) ---------------------------------------
class ItemOutput(serializers.Serializer):
    """An ``agent_preferences_v1`` item. Active/retired items are the stored rows; an
    expired item is ``{key, state: "expired", statement: null, operation_id,
    source_ref, recorded_at, expires_at}`` (no source_kind/quote/supersedes)."""

    key = serializers.CharField()
    state = serializers.ChoiceField(choices=["active", "retired", "expired"])
    statement = serializers.CharField(allow_null=True)
    expires_at = serializers.CharField(allow_null=True)
    source_kind = serializers.ChoiceField(choices=["user_instruction"], required=False)
    source_ref = serializers.CharField()
    source_quote = serializers.CharField(required=False)
    recorded_at = serializers.CharField()
    operation_id = serializers.CharField()
    supersedes_operation_id = serializers.CharField(allow_null=True, required=False)


class CurrentOutput(serializers.Serializer):
    schema_version = serializers.ChoiceField(choices=["agent_preferences_v1"])
    revision = serializers.CharField(allow_null=True, help_text="Opaque; echo it back.")
    authority = serializers.ChoiceField(choices=["advisory_only"])
    items = ItemOutput(many=True)
    instructions = serializers.CharField()


class UsageOutput(serializers.Serializer):
    subjects = serializers.IntegerField()
    bytes = serializers.IntegerField()
    max_subjects = serializers.IntegerField()
    max_bytes = serializers.IntegerField()


class ReceiptOutput(serializers.Serializer):
    operation_id = serializers.CharField()
    intent_hash = serializers.CharField()
    key = serializers.CharField()
    state = serializers.CharField(help_text="active or retired: the state written")
    supersedes_operation_id = serializers.CharField(allow_null=True)


class _Document(serializers.Serializer):
    ok = serializers.BooleanField()
    schema_version = serializers.CharField()
    goal_id = serializers.CharField()
    agent_id = serializers.CharField()


class ReadOutput(_Document):
    status = serializers.ChoiceField(choices=["read"])
    current = CurrentOutput()
    usage = UsageOutput()


class ObserveOutput(serializers.Serializer):
    ok = serializers.BooleanField()
    schema_version = serializers.CharField()
    status = serializers.ChoiceField(choices=["absent", "observed"])
    observation_count = serializers.IntegerField()


class WriteOutput(_Document):
    status = serializers.ChoiceField(choices=["preview", "applied", "replayed"])
    proposed = ItemOutput(required=False, help_text="preview: the item that would be written")
    receipt = ReceiptOutput(required=False, help_text="applied / replayed (the original)")
    current = CurrentOutput()
    usage = UsageOutput()


class EventOutput(ItemOutput):
    schema_version = serializers.ChoiceField(choices=["agent_preference_changed_v1"])
    sequence = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=["remember", "retire", "migrate"])
    revision = serializers.CharField()


class HistoryOutput(_Document):
    status = serializers.ChoiceField(choices=["history"])
    events = EventOutput(many=True)
    has_more = serializers.BooleanField()
    next_cursor = serializers.CharField(allow_null=True)
    current = CurrentOutput()
    usage = UsageOutput()


class ConflictOutput(ErrorEnvelope):
    """A revision/operation conflict: the error document plus the current view."""

    current = CurrentOutput(required=False, help_text="revision/operation conflicts")
