"""Request parsing and the OpenAPI description of turn_recall's documents (the documents
themselves are built by ``turn_recall.documents``; these serializers only describe
them). Fields that recur are declared once: the caller scope (``ScopedInput``), the
turn id (``_turn_id``) and the boundary flags (``contracts.ERROR_BOUNDARY``)."""

from rest_framework import serializers

from hooks.api.serializers import StrictBooleanField
from loopx_site.core.api.fields import JsonObjectField
from loopx_site.core.api.serializers import IdentifierField, StrictInput
from turn_recall import contracts as c


def _many(field, *names: str, **options) -> dict:
    """The same field kind under several names (a fresh field each)."""
    return {name: field(**options) for name in names}


def _described(name: str, **fields) -> type[serializers.Serializer]:
    """A response serializer built from ``fields`` (for the schema only)."""
    return type(name, (serializers.Serializer,), {"__module__": __name__, **fields})


def _turn_id(**options) -> serializers.CharField:
    return serializers.CharField(max_length=c.MAX_TURN_ID, trim_whitespace=False, **options)


class ScopedInput(StrictInput):
    """The (Goal, Agent) a request names; the caller resolver decides what it may name."""

    goal_id = IdentifierField(
        required=False, help_text="Operators only; a host token's Goal is its own."
    )
    agent_id = IdentifierField(
        required=False, help_text="Operators and Goal-wide tokens; else the token's Agent."
    )


class TurnRecallInput(ScopedInput):
    turn_instance_id = _turn_id()
    quota_decision = JsonObjectField(
        help_text="The exact quota should-run packet the host routed with (ours or LoopX's)."
    )
    session_ref = serializers.CharField(
        required=False,
        max_length=c.MAX_SESSION_REF,
        trim_whitespace=False,
        help_text="LoopX's --session-ref.",
    )
    execute = StrictBooleanField(required=False, default=False)
    force_refresh = StrictBooleanField(
        required=False, default=False, help_text="Ignore this turn's stored receipt."
    )


class CapsuleVerifyInput(ScopedInput):
    capsule = JsonObjectField(help_text="The turn_capsule (loopx_turn_capsule_v0) as received.")


class QuotaAdmitInput(StrictInput):
    turn_instance_id = _turn_id(required=False, help_text="Required to execute.")
    execute = StrictBooleanField(required=False, default=False)


TurnRecallOutput = _described(
    "TurnRecallOutput",
    ok=serializers.BooleanField(),
    schema_version=serializers.CharField(default=c.RECALL_SCHEMA),
    status=serializers.CharField(help_text=" | ".join(c.STATUSES)),
    reason_code=serializers.CharField(allow_null=True),
    **_many(serializers.CharField, "goal_id", "agent_id"),
    **_many(serializers.CharField, "turn_recall_id", "situation_fingerprint", required=False),
    situation=serializers.DictField(required=False),
    context=serializers.DictField(required=False, allow_null=True, help_text="Private."),
    experiment=serializers.DictField(
        required=False, help_text="disabled only: Reward Memory's experiment status."
    ),
    provider_call_count=serializers.IntegerField(),
    **_many(serializers.BooleanField, *c.ERROR_BOUNDARY),
    replay_dropped=serializers.DictField(
        required=False,
        help_text="replayed only: {count, by_reason} of stored guidance a fresh read no "
        "longer returns (retired, revoked, superseded, expired, refuted, quarantined, …).",
    ),
)

CapsuleVerifyOutput = _described(
    "CapsuleVerifyOutput",
    ok=serializers.BooleanField(),
    schema_version=serializers.CharField(default=c.CAPSULE_VERIFICATION_SCHEMA),
    status=serializers.CharField(help_text=f"{c.CAPSULE_VALID} | {c.CAPSULE_INVALID}"),
    valid=serializers.BooleanField(),
    reason=serializers.CharField(
        allow_null=True, help_text="invalid only: " + " | ".join(c.CAPSULE_REASONS)
    ),
    **_many(serializers.CharField, "goal_id", "agent_id", "algorithm"),
    **_many(serializers.CharField, "capsule_goal_id", "capsule_agent_id", allow_null=True),
    expires_at=serializers.CharField(allow_null=True),
    key_revealed=serializers.BooleanField(),
)

QuotaDecisionOutput = _described(
    "QuotaDecisionOutput",
    ok=serializers.BooleanField(),
    schema_version=serializers.CharField(default=c.QUOTA_SCHEMA),
    mode=serializers.CharField(default=c.QUOTA_MODE),
    status=serializers.CharField(help_text="run | idle"),
    **_many(serializers.CharField, "goal_id", "agent_id", "decision", "lifecycle_phase"),
    **_many(serializers.CharField, "next_intent", "observed_at"),
    should_run=serializers.BooleanField(),
    selected_todo=serializers.DictField(allow_null=True),
    recent_outcomes=serializers.ListField(child=serializers.CharField()),
    **_many(serializers.DictField, "agent_identity", "interaction_state", "quota"),
    goal_boundary=serializers.DictField(
        help_text="capabilities.reward_memory (with config_runtime_route) when the Agent's "
        "Reward Memory experiment is enabled, as LoopX prints it."
    ),
    **_many(serializers.DictField, "turn_start_hooks", "turn_capsule", required=False),
    turn_instance_id=serializers.CharField(required=False),
    reward_memory_recall=serializers.DictField(
        required=False, help_text="Executing admission only: the turn's agent_turn_recall_v0."
    ),
)
