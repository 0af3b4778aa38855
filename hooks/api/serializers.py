from rest_framework import serializers

from hooks.errors import FAILURE_CODES
from hooks.models import EVENT_KINDS, HookDispatch, HookIntent
from hooks.registry import PROFILE_NAMES
from loopx_site.core.api.serializers import IdentifierField


class StrictBooleanField(serializers.BooleanField):
    """Only JSON ``true``/``false`` (no "yes", 1 or "true" strings)."""

    def to_internal_value(self, data):
        if isinstance(data, bool):
            return data
        self.fail("invalid", input=data)
        return None  # unreachable: fail() raises


# -- Todos --------------------------------------------------------------------------------
class TodoAddInput(serializers.Serializer):
    todo_id = IdentifierField()
    title = serializers.CharField(max_length=500, trim_whitespace=False)
    segment_ref = serializers.CharField(max_length=256, required=False, trim_whitespace=False)


class TodoOutput(serializers.Serializer):
    todo_id = serializers.CharField()
    goal_id = serializers.CharField()
    title = serializers.CharField()
    state = serializers.ChoiceField(choices=["open", "completed"])
    segment_ref = serializers.CharField(allow_null=True)
    revision = serializers.IntegerField()
    replan_count = serializers.IntegerField()
    created_at = serializers.CharField()
    updated_at = serializers.CharField()
    completed_at = serializers.CharField(allow_null=True)


class TodoAddOutput(serializers.Serializer):
    schema_version = serializers.CharField(default="loopx_todo_v0")
    created = serializers.BooleanField()
    todo = TodoOutput()


class TodoListOutput(serializers.Serializer):
    schema_version = serializers.CharField(default="loopx_todo_list_v0")
    goal_id = serializers.CharField()
    todos = TodoOutput(many=True)


# -- settlement ----------------------------------------------------------------------------
class SettleInput(serializers.Serializer):
    goal_id = IdentifierField()
    agent_id = IdentifierField()
    todo_id = IdentifierField()
    turn_instance_id = IdentifierField()
    event_kind = serializers.ChoiceField(choices=EVENT_KINDS)
    profile = serializers.ChoiceField(choices=PROFILE_NAMES, required=False)
    execute = StrictBooleanField(required=False, default=False)


class ReceiptOutput(serializers.Serializer):
    schema_version = serializers.CharField(default="loopx_durable_writeback_receipt_v0")
    receipt_id = serializers.CharField()
    effect_id = serializers.CharField()
    step_kind = serializers.CharField()
    goal_id = serializers.CharField(required=False)
    agent_id = serializers.CharField(required=False)
    todo_id = serializers.CharField(required=False)
    turn_instance_id = serializers.CharField(required=False)
    event_kind = serializers.ChoiceField(choices=EVENT_KINDS)
    state = serializers.ChoiceField(choices=["prepared", "committed", "rejected"])
    state_revision = serializers.CharField()
    committed_at = serializers.CharField(allow_null=True)
    event_facts_digest = serializers.CharField(required=False)
    checkpoint_digest = serializers.CharField(required=False, allow_null=True)


class QuotaSpendOutput(serializers.Serializer):
    schema_version = serializers.CharField(default="loopx_quota_spend_v0")
    spend_id = serializers.CharField()
    goal_id = serializers.CharField()
    agent_id = serializers.CharField()
    units = serializers.IntegerField()
    spent = serializers.BooleanField()
    spent_at = serializers.CharField(allow_null=True)
    eligibility = serializers.DictField()


class DispatchOutput(serializers.Serializer):
    schema_version = serializers.CharField(default="loopx_post_writeback_dispatch_receipt_v0")
    dispatch_id = serializers.CharField()
    hook_id = serializers.CharField()
    capability_id = serializers.CharField(allow_null=True)
    receipt_id = serializers.CharField()
    goal_id = serializers.CharField()
    agent_id = serializers.CharField()
    event_kind = serializers.ChoiceField(choices=EVENT_KINDS)
    registration_schema_version = serializers.CharField()
    registration_digest = serializers.CharField(allow_null=True)
    status = serializers.ChoiceField(choices=HookDispatch.Status.values)
    failure_code = serializers.ChoiceField(choices=FAILURE_CODES, allow_null=True)
    failure_reason = serializers.CharField(allow_null=True)
    result_digest = serializers.CharField(allow_null=True)
    intent_ids = serializers.ListField(child=serializers.CharField())
    attempts = serializers.IntegerField()
    max_attempts = serializers.IntegerField()
    conflict_count = serializers.IntegerField()
    recorded_at = serializers.CharField()


class PhaseOutcomeOutput(serializers.Serializer):
    dispatch_id = serializers.CharField()
    hook_id = serializers.CharField()
    outcome = serializers.ChoiceField(
        choices=["recorded", "replayed", "retried", "conflict", "failed_again"]
    )
    code = serializers.CharField(allow_null=True)
    provider_invoked = serializers.BooleanField()


class HookPhaseOutput(serializers.Serializer):
    enabled = serializers.BooleanField()
    status = serializers.ChoiceField(
        choices=["preview", "dispatched", "disabled", "not_admissible", "deferred"]
    )
    reason = serializers.CharField(allow_null=True, required=False)
    planned = serializers.ListField(child=serializers.DictField(), required=False)
    dispatches = DispatchOutput(many=True)
    outcomes = PhaseOutcomeOutput(many=True)
    recovered_receipt_ids = serializers.ListField(child=serializers.CharField(), required=False)


class SettlementOutput(serializers.Serializer):
    goal_id = serializers.CharField()
    agent_id = serializers.CharField()
    todo_id = serializers.CharField()
    turn_instance_id = serializers.CharField()
    event_kind = serializers.ChoiceField(choices=EVENT_KINDS)
    effect_id = serializers.CharField()
    profile = serializers.CharField()
    post_writeback_hooks_enabled = serializers.BooleanField()
    hook_allowlist = serializers.ListField(child=serializers.CharField(), allow_null=True)


class SettleOutput(serializers.Serializer):
    schema_version = serializers.CharField(default="loopx_turn_settlement_v0")
    ok = serializers.BooleanField()
    status = serializers.ChoiceField(choices=["preview", "committed", "replayed"])
    execute = serializers.BooleanField()
    settlement = SettlementOutput()
    receipt = ReceiptOutput()
    quota_spend = QuotaSpendOutput(allow_null=True)
    hook_phase = HookPhaseOutput()


# -- journal and outbox listings ------------------------------------------------------------
class _ListQuery(serializers.Serializer):
    goal_id = IdentifierField(required=False)
    limit = serializers.IntegerField(min_value=1, max_value=500, required=False, default=100)
    cursor = serializers.IntegerField(min_value=1, required=False)


class DispatchListQuery(_ListQuery):
    status = serializers.ChoiceField(choices=HookDispatch.Status.values, required=False)
    failure_code = serializers.ChoiceField(choices=FAILURE_CODES, required=False)
    receipt_id = IdentifierField(required=False)
    hook_id = serializers.RegexField(r"^[a-z][a-z0-9_.]{0,139}$", required=False)


class IntentListQuery(_ListQuery):
    status = serializers.ChoiceField(choices=HookIntent.Status.values, required=False)
    intent_kind = serializers.RegexField(r"^[a-z][a-z0-9_.]{0,139}$", required=False)
    dispatch_id = serializers.RegexField(r"^pwh_[0-9a-f]{64}$", required=False)


class DispatchListOutput(serializers.Serializer):
    schema_version = serializers.CharField(default="loopx_post_writeback_dispatch_list_v0")
    dispatches = DispatchOutput(many=True)
    next_cursor = serializers.IntegerField(allow_null=True)


class IntentOutboxOutput(serializers.Serializer):
    status = serializers.ChoiceField(choices=HookIntent.Status.values)
    status_reason = serializers.CharField(allow_null=True)
    goal_id = serializers.CharField()
    agent_id = serializers.CharField()
    created_at = serializers.CharField()
    updated_at = serializers.CharField()


class IntentOutput(serializers.Serializer):
    schema_version = serializers.CharField(default="loopx_post_writeback_intent_v0")
    intent_id = serializers.CharField()
    hook_id = serializers.CharField()
    capability_id = serializers.CharField()
    source_dispatch_id = serializers.CharField()
    intent_kind = serializers.CharField()
    operation = serializers.CharField()
    policy_version = serializers.CharField()
    payload = serializers.DictField()
    budget = serializers.DictField()
    requested_write_scope = serializers.ListField(child=serializers.CharField())
    failure_policy = serializers.CharField()
    grants_new_action_authority = serializers.BooleanField()
    external_write_performed = serializers.BooleanField()
    outbox = IntentOutboxOutput()


class IntentListOutput(serializers.Serializer):
    schema_version = serializers.CharField(default="loopx_post_writeback_intent_list_v0")
    intents = IntentOutput(many=True)
    next_cursor = serializers.IntegerField(allow_null=True)


class RegistrationOutput(serializers.Serializer):
    hook_id = serializers.CharField(allow_null=True)
    capability_id = serializers.CharField(allow_null=True)
    provider = serializers.CharField(required=False, help_text="Operators only.")
    status = serializers.ChoiceField(choices=["installed", "rejected"])
    failure_code = serializers.CharField(allow_null=True)
    reason = serializers.CharField(allow_null=True)
    registration = serializers.DictField(allow_null=True)
    registration_digest = serializers.CharField(allow_null=True)
    admitted_by_profile = serializers.BooleanField()


class RegistrationListOutput(serializers.Serializer):
    schema_version = serializers.CharField(default="loopx_post_writeback_registration_list_v0")
    registry_digest = serializers.CharField()
    profile = serializers.DictField()
    registrations = RegistrationOutput(many=True)
