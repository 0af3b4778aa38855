from rest_framework import serializers

from hooks.api.serializers import StrictBooleanField
from loopx_site.core.api.fields import JsonObjectField
from loopx_site.core.api.serializers import IdentifierField


class TurnRecallInput(serializers.Serializer):
    goal_id = IdentifierField(
        required=False, help_text="Operators only; a host token's Goal is its own."
    )
    agent_id = IdentifierField(
        required=False, help_text="Operators and Goal-wide tokens; else the token's Agent."
    )
    turn_instance_id = serializers.CharField(max_length=200, trim_whitespace=False)
    quota_decision = JsonObjectField(
        help_text="The exact loopx_quota_decision_v0 packet the host routed with."
    )
    session_ref = serializers.CharField(
        required=False, max_length=200, trim_whitespace=False, help_text="LoopX's --session-ref."
    )
    execute = StrictBooleanField(required=False, default=False)
    force_refresh = StrictBooleanField(
        required=False, default=False, help_text="Ignore this turn's stored receipt."
    )


class TurnRecallOutput(serializers.Serializer):
    ok = serializers.BooleanField()
    schema_version = serializers.CharField(default="agent_turn_recall_v0")
    status = serializers.CharField(
        help_text="preview | disabled | applied | empty | replayed | degraded"
    )
    reason_code = serializers.CharField(allow_null=True)
    turn_recall_id = serializers.CharField()
    situation_fingerprint = serializers.CharField()
    situation = serializers.DictField()
    context = serializers.DictField(allow_null=True, help_text="Private to the caller.")
    provider_call_count = serializers.IntegerField()
    grants_new_action_authority = serializers.BooleanField()
    quota_spend_performed = serializers.BooleanField()
    suppress_external_sinks = serializers.BooleanField()
    replay_dropped = serializers.DictField(
        required=False,
        help_text="replayed only: {count, by_reason} of stored guidance a fresh read no "
        "longer returns (retired, revoked, superseded, expired, refuted, quarantined, …).",
    )


class QuotaAdmitInput(serializers.Serializer):
    turn_instance_id = serializers.CharField(
        required=False, max_length=200, trim_whitespace=False, help_text="Required to execute."
    )
    execute = StrictBooleanField(required=False, default=False)


class QuotaDecisionOutput(serializers.Serializer):
    ok = serializers.BooleanField()
    schema_version = serializers.CharField(default="loopx_quota_decision_v0")
    status = serializers.CharField(help_text="run | idle")
    goal_id = serializers.CharField()
    agent_id = serializers.CharField()
    decision = serializers.CharField()
    should_run = serializers.BooleanField()
    lifecycle_phase = serializers.CharField()
    selected_todo = serializers.DictField(allow_null=True)
    recent_outcomes = serializers.ListField(child=serializers.CharField())
    next_intent = serializers.CharField()
    interaction_state = serializers.DictField()
    quota = serializers.DictField()
    goal_boundary = serializers.DictField(
        help_text="capabilities.reward_memory (with config_runtime_route) when the Agent's "
        "Reward Memory experiment is enabled, as LoopX prints it."
    )
    turn_start_hooks = serializers.DictField(required=False)
    turn_capsule = serializers.DictField(required=False)
    turn_instance_id = serializers.CharField(required=False)
    reward_memory_recall = serializers.DictField(
        required=False, help_text="Executing admission only: the turn's agent_turn_recall_v0."
    )


class CapsuleVerifyInput(serializers.Serializer):
    goal_id = IdentifierField(
        required=False, help_text="Operators only; a host token's Goal is its own."
    )
    agent_id = IdentifierField(
        required=False, help_text="Operators and Goal-wide tokens; else the token's Agent."
    )
    capsule = JsonObjectField(help_text="The turn_capsule (loopx_turn_capsule_v0) as received.")


class CapsuleVerifyOutput(serializers.Serializer):
    ok = serializers.BooleanField()
    schema_version = serializers.CharField(default="loopx_turn_capsule_verification_v0")
    status = serializers.CharField(help_text="valid | invalid")
    valid = serializers.BooleanField()
    reason = serializers.CharField(
        allow_null=True, help_text="invalid only: malformed | tampered | expired | scope_mismatch"
    )
    goal_id = serializers.CharField()
    agent_id = serializers.CharField()
    capsule_goal_id = serializers.CharField(allow_null=True)
    capsule_agent_id = serializers.CharField(allow_null=True)
    expires_at = serializers.CharField(allow_null=True)
    algorithm = serializers.CharField()
    key_revealed = serializers.BooleanField()
