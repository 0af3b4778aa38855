"""Input/output serializers of the explicit preference API (shape checks only; the
service applies every rule)."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers


@extend_schema_field({"type": "string", "nullable": True, "example": "3"})
class ExpectedRevisionField(serializers.Field):
    """``null``/``"none"`` or the opaque revision string read back (``"3"``)."""

    def to_internal_value(self, data):
        if data is None or (isinstance(data, str | int) and not isinstance(data, bool)):
            return data
        raise serializers.ValidationError("expected_revision must be null or a revision string")

    def to_representation(self, value):
        return value


class RememberInput(serializers.Serializer):
    key = serializers.CharField(max_length=128, trim_whitespace=False)
    statement = serializers.CharField(max_length=1200, trim_whitespace=False)
    source_ref = serializers.CharField(max_length=1024, trim_whitespace=False)
    source_quote = serializers.CharField(max_length=1600, trim_whitespace=False)
    expected_revision = ExpectedRevisionField(allow_null=True)
    operation_id = serializers.CharField(max_length=128, trim_whitespace=False)
    expires_at = serializers.CharField(required=False, allow_null=True, default=None)
    execute = serializers.BooleanField(default=False)


class RetireInput(serializers.Serializer):
    key = serializers.CharField(max_length=128, trim_whitespace=False)
    source_ref = serializers.CharField(max_length=1024, trim_whitespace=False)
    source_quote = serializers.CharField(max_length=1600, trim_whitespace=False)
    expected_revision = ExpectedRevisionField(allow_null=True)
    operation_id = serializers.CharField(max_length=128, trim_whitespace=False)
    execute = serializers.BooleanField(default=False)


class HistoryQuery(serializers.Serializer):
    after_cursor = serializers.CharField(required=False, allow_blank=False, max_length=200)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=200, default=50)


class SubjectOutput(serializers.Serializer):
    key = serializers.CharField()
    state = serializers.ChoiceField(choices=["active", "retired", "expired"])
    actionable = serializers.BooleanField()
    statement = serializers.CharField(allow_null=True)
    revision = serializers.CharField()
    operation_id = serializers.CharField()
    source_ref = serializers.CharField()
    expires_at = serializers.CharField(allow_null=True)
    updated_at = serializers.CharField()


class UsageOutput(serializers.Serializer):
    subjects = serializers.IntegerField()
    bytes = serializers.IntegerField()
    max_subjects = serializers.IntegerField()
    max_bytes = serializers.IntegerField()


class ViewOutput(serializers.Serializer):
    schema_version = serializers.CharField()
    goal_id = serializers.CharField()
    agent_id = serializers.CharField()
    participating = serializers.BooleanField()
    revision = serializers.CharField(allow_null=True)
    authority = serializers.CharField()
    current = SubjectOutput(many=True)
    usage = UsageOutput()


class ReceiptOutput(serializers.Serializer):
    schema_version = serializers.CharField()
    status = serializers.ChoiceField(choices=["preview", "committed", "replayed"])
    operation_id = serializers.CharField()
    kind = serializers.CharField()
    key = serializers.CharField()
    expected_revision = serializers.CharField(allow_null=True)
    resulting_revision = serializers.CharField()
    predecessor_operation_id = serializers.CharField(allow_null=True)
    view = ViewOutput()


class HistoryEntryOutput(serializers.Serializer):
    sequence = serializers.IntegerField()
    operation_id = serializers.CharField()
    kind = serializers.CharField()
    key = serializers.CharField()
    statement = serializers.CharField(allow_null=True)
    source_ref = serializers.CharField()
    source_quote = serializers.CharField()
    predecessor_operation_id = serializers.CharField(allow_null=True)
    resulting_revision = serializers.CharField()
    expires_at = serializers.CharField(allow_null=True)
    created_at = serializers.CharField()


class HistoryOutput(serializers.Serializer):
    schema_version = serializers.CharField()
    goal_id = serializers.CharField()
    agent_id = serializers.CharField()
    entries = HistoryEntryOutput(many=True)
    next_cursor = serializers.CharField(allow_null=True)
