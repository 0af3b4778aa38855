from rest_framework import serializers

from hooks import contracts, documents
from hooks.errors import FAILURE_CODES
from hooks.models import EVENT_KINDS, HookDispatch, HookIntent, Todo
from hooks.registry import PROFILE_NAMES
from loopx_site.core.api.fields import (
    FullRegexField,
    StrictBooleanField,
    StrictQuerySerializer,
)
from loopx_site.core.api.serializers import IdentifierField, StrictInput


# -- Todos --------------------------------------------------------------------------------
class HookTodoAddInput(StrictInput):
    todo_id = IdentifierField()
    title = serializers.CharField(max_length=500, trim_whitespace=False)
    segment_ref = serializers.CharField(max_length=256, required=False, trim_whitespace=False)
    validator = serializers.CharField(
        max_length=64,
        required=False,
        help_text="validator_id of an installed completion validator (never a command).",
    )
    execute = StrictBooleanField(required=False, default=False)


class HookTodoOutput(serializers.Serializer):
    todo_id = serializers.CharField()
    goal_id = serializers.CharField()
    title = serializers.CharField()
    state = serializers.CharField(help_text="open | completed")
    segment_ref = serializers.CharField(allow_null=True)
    validator = serializers.CharField(allow_null=True, help_text="Declared completion validator.")
    revision = serializers.IntegerField()
    replan_count = serializers.IntegerField()
    created_at = serializers.CharField()
    updated_at = serializers.CharField()
    completed_at = serializers.CharField(allow_null=True)


class HookTodoAddOutput(serializers.Serializer):
    schema_version = serializers.CharField(default=documents.TODO_SCHEMA)
    status = serializers.CharField(help_text="preview | created | unchanged")
    execute = serializers.BooleanField()
    created = serializers.BooleanField()
    todo = HookTodoOutput()


class HookTodoListQuery(StrictQuerySerializer):
    state = serializers.ChoiceField(choices=Todo.State.values, required=False)


class HookTodoListOutput(serializers.Serializer):
    schema_version = serializers.CharField(default=documents.TODO_LIST_SCHEMA)
    goal_id = serializers.CharField()
    todos = HookTodoOutput(many=True)


# -- settlement ----------------------------------------------------------------------------
class TurnSettleInput(StrictInput):
    goal_id = IdentifierField()
    agent_id = IdentifierField()
    todo_id = IdentifierField()
    turn_instance_id = IdentifierField()
    event_kind = serializers.ChoiceField(choices=EVENT_KINDS)
    profile = serializers.ChoiceField(choices=PROFILE_NAMES, required=False)
    execute = StrictBooleanField(required=False, default=False)
    # Reward Memory post-settlement reflection (reward_memory owns the rule)
    reward_memory_reflection = serializers.DictField(required=False)
    reward_memory_validation = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="Ignored: the server runs the Todo's declared validator "
        "(reported as caller_validation_ignored).",
    )


class DurableWritebackReceiptOutput(serializers.Serializer):
    schema_version = serializers.CharField(default=documents.RECEIPT_SCHEMA)
    receipt_id = serializers.CharField()
    effect_id = serializers.CharField()
    step_kind = serializers.CharField()
    goal_id = serializers.CharField(required=False)
    agent_id = serializers.CharField(required=False)
    todo_id = serializers.CharField(required=False)
    turn_instance_id = serializers.CharField(required=False)
    event_kind = serializers.CharField()
    state = serializers.CharField(help_text="prepared | committed | rejected")
    state_revision = serializers.CharField()
    committed_at = serializers.CharField(allow_null=True)
    event_facts_digest = serializers.CharField(required=False)
    checkpoint_digest = serializers.CharField(required=False, allow_null=True)


class TurnQuotaSpendOutput(serializers.Serializer):
    schema_version = serializers.CharField(default=documents.QUOTA_SPEND_SCHEMA)
    spend_id = serializers.CharField()
    goal_id = serializers.CharField()
    agent_id = serializers.CharField()
    units = serializers.IntegerField()
    spent = serializers.BooleanField()
    spent_at = serializers.CharField(allow_null=True)
    eligibility = serializers.DictField()


class HookDispatchOutput(serializers.Serializer):
    schema_version = serializers.CharField(default=contracts.DISPATCH_RECEIPT_SCHEMA)
    dispatch_id = serializers.CharField()
    hook_id = serializers.CharField()
    capability_id = serializers.CharField(allow_null=True)
    receipt_id = serializers.CharField()
    goal_id = serializers.CharField()
    agent_id = serializers.CharField()
    event_kind = serializers.ChoiceField(choices=EVENT_KINDS)
    registration_schema_version = serializers.CharField()
    registration_digest = serializers.CharField(allow_null=True)
    status = serializers.CharField(help_text="accepted | not_applicable | failed")
    failure_code = serializers.CharField(
        allow_null=True, help_text="One of: " + ", ".join(FAILURE_CODES)
    )
    failure_reason = serializers.CharField(allow_null=True)
    result_digest = serializers.CharField(allow_null=True)
    intent_ids = serializers.ListField(child=serializers.CharField())
    attempts = serializers.IntegerField()
    max_attempts = serializers.IntegerField()
    conflict_count = serializers.IntegerField()
    conflict_code = serializers.CharField(
        allow_null=True, help_text="intent_conflict when a later run proposed a different result."
    )
    recorded_at = serializers.CharField()


class HookPhaseOutcomeOutput(serializers.Serializer):
    dispatch_id = serializers.CharField()
    hook_id = serializers.CharField()
    outcome = serializers.CharField(
        help_text="recorded | replayed | retried | conflict | failed_again"
    )
    code = serializers.CharField(allow_null=True)
    provider_invoked = serializers.BooleanField()


class TurnHookPhaseOutput(serializers.Serializer):
    enabled = serializers.BooleanField()
    status = serializers.CharField(
        help_text="preview | dispatched | disabled | not_admissible | deferred"
    )
    reason = serializers.CharField(allow_null=True, required=False)
    planned = serializers.ListField(child=serializers.DictField(), required=False)
    dispatches = HookDispatchOutput(many=True)
    outcomes = HookPhaseOutcomeOutput(many=True)
    recovered_receipt_ids = serializers.ListField(child=serializers.CharField(), required=False)


class TurnSettlementIdentityOutput(serializers.Serializer):
    goal_id = serializers.CharField()
    agent_id = serializers.CharField()
    todo_id = serializers.CharField()
    turn_instance_id = serializers.CharField()
    event_kind = serializers.ChoiceField(choices=EVENT_KINDS)
    effect_id = serializers.CharField()
    profile = serializers.CharField()
    post_writeback_hooks_enabled = serializers.BooleanField()
    hook_allowlist = serializers.ListField(child=serializers.CharField(), allow_null=True)


class TurnSettleOutput(serializers.Serializer):
    schema_version = serializers.CharField(default=documents.SETTLEMENT_SCHEMA)
    ok = serializers.BooleanField()
    status = serializers.CharField(help_text="preview | committed | replayed")
    execute = serializers.BooleanField()
    settlement = TurnSettlementIdentityOutput()
    receipt = DurableWritebackReceiptOutput()
    quota_spend = TurnQuotaSpendOutput(allow_null=True)
    hook_phase = TurnHookPhaseOutput()


# -- journal and outbox listings ------------------------------------------------------------
class _ListQuery(StrictQuerySerializer):
    goal_id = IdentifierField(required=False)
    limit = serializers.IntegerField(min_value=1, max_value=500, required=False, default=100)
    cursor = serializers.IntegerField(min_value=1, required=False)


class HookDispatchListQuery(_ListQuery):
    status = serializers.ChoiceField(choices=HookDispatch.Status.values, required=False)
    failure_code = serializers.ChoiceField(choices=FAILURE_CODES, required=False)
    receipt_id = IdentifierField(required=False)
    hook_id = FullRegexField(r"^[a-z][a-z0-9_.]{0,139}$", required=False)


class HookIntentListQuery(_ListQuery):
    status = serializers.ChoiceField(choices=HookIntent.Status.values, required=False)
    intent_kind = FullRegexField(r"^[a-z][a-z0-9_.]{0,139}$", required=False)
    dispatch_id = FullRegexField(r"^pwh_[0-9a-f]{64}$", required=False)


class HookDispatchListOutput(serializers.Serializer):
    schema_version = serializers.CharField(default=documents.DISPATCH_LIST_SCHEMA)
    dispatches = HookDispatchOutput(many=True)
    next_cursor = serializers.IntegerField(allow_null=True)


class HookIntentOutboxOutput(serializers.Serializer):
    status = serializers.CharField(help_text="pending | admitted | rejected | executed")
    status_reason = serializers.CharField(allow_null=True)
    goal_id = serializers.CharField()
    agent_id = serializers.CharField()
    created_at = serializers.CharField()
    updated_at = serializers.CharField()


class HookIntentOutput(serializers.Serializer):
    schema_version = serializers.CharField(default=contracts.INTENT_SCHEMA)
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
    outbox = HookIntentOutboxOutput()


class HookIntentListOutput(serializers.Serializer):
    schema_version = serializers.CharField(default=documents.INTENT_LIST_SCHEMA)
    intents = HookIntentOutput(many=True)
    next_cursor = serializers.IntegerField(allow_null=True)


class HookRegistrationOutput(serializers.Serializer):
    hook_id = serializers.CharField(allow_null=True)
    capability_id = serializers.CharField(allow_null=True)
    provider = serializers.CharField(required=False, help_text="Operators only.")
    status = serializers.CharField(help_text="installed | rejected")
    failure_code = serializers.CharField(allow_null=True)
    reason = serializers.CharField(allow_null=True)
    registration = serializers.DictField(allow_null=True)
    registration_digest = serializers.CharField(allow_null=True)
    admitted_by_profile = serializers.BooleanField()


class HookRegistrationListOutput(serializers.Serializer):
    schema_version = serializers.CharField(default=documents.REGISTRATION_LIST_SCHEMA)
    registry_digest = serializers.CharField()
    profile = serializers.DictField()
    registrations = HookRegistrationOutput(many=True)
