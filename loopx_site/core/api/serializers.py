"""Serializers of the kernel's API, and the one input rule every app's request bodies
follow: ``StrictInput`` — a field the operation does not know is ``invalid_argument``
naming that field (a typo such as ``exectue`` must not silently become a preview)."""

from collections.abc import Mapping

from rest_framework import serializers

from loopx_site.core import documents
from loopx_site.core.api.fields import FullRegexField
from loopx_site.core.validation import IDENTIFIER_RE


class StrictInput(serializers.Serializer):
    """A request body (or a nested object of one) with exactly the declared fields."""

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            unknown = sorted(str(k) for k in data if k not in self.fields)
            if unknown:
                known = ", ".join(sorted(self.fields)) or "none"
                raise serializers.ValidationError(
                    {unknown[0]: [f"Unknown field {unknown[0]!r}; this operation takes: {known}."]}
                )
        return super().to_internal_value(data)


class OpaqueStringField(serializers.Field):
    """``null`` or a string read back from the server and echoed exactly (a revision):
    a number is refused, never coerced (``3`` and ``"3"`` are different documents)."""

    def __init__(self, *, what: str = "value", **kwargs):
        self.what = what
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if data is None or isinstance(data, str):
            return data
        raise serializers.ValidationError(
            f'{self.what} must be null or the string read back (e.g. "3"), '
            f"not a {type(data).__name__}."
        )

    def to_representation(self, value):
        return value


class IdentifierField(FullRegexField):
    def __init__(self, **kwargs):
        super().__init__(IDENTIFIER_RE, max_length=128, **kwargs)


class GoalRegisterInput(StrictInput):
    goal_id = IdentifierField()
    agent_ids = serializers.ListField(child=IdentifierField(), min_length=1, max_length=64)
    state_ref = serializers.CharField(max_length=1024, required=False, trim_whitespace=False)
    instance_id = IdentifierField(required=False)
    execute = serializers.BooleanField(default=False)


class GoalOutput(serializers.Serializer):
    goal_id = serializers.CharField()
    state_ref = serializers.CharField(allow_null=True)
    instance_id = serializers.CharField(allow_null=True)
    agents = serializers.ListField(child=serializers.CharField())
    created_at = serializers.CharField()
    updated_at = serializers.CharField()


class GoalListOutput(serializers.Serializer):
    schema_version = serializers.CharField(default=documents.GOAL_LIST_SCHEMA)
    goals = GoalOutput(many=True)


class GoalPlannedOutput(GoalOutput):
    created_at = serializers.CharField(allow_null=True)
    updated_at = serializers.CharField(allow_null=True)


class GoalRegistrationOutput(serializers.Serializer):
    schema_version = serializers.CharField(default=documents.GOAL_REGISTRATION_SCHEMA)
    status = serializers.ChoiceField(["preview", "registered", "unchanged"])
    execute = serializers.BooleanField()
    created = serializers.BooleanField()
    added_agents = serializers.ListField(child=serializers.CharField())
    changes = serializers.DictField(child=serializers.DictField())
    warnings = serializers.ListField(child=serializers.CharField())
    goal = GoalPlannedOutput()
