from rest_framework import serializers

from loopx_site.core import documents
from loopx_site.core.api.fields import FullRegexField
from loopx_site.core.validation import IDENTIFIER_RE


class IdentifierField(FullRegexField):
    def __init__(self, **kwargs):
        super().__init__(IDENTIFIER_RE, max_length=128, **kwargs)


class GoalRegisterInput(serializers.Serializer):
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
