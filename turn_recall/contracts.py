"""Names of the turn recall documents (LoopX's, see ``loopx_wire.md``) and bounds."""

from preferences import selectors as pref_selectors

AREA = "agent_turn_recall"

RECALL_SCHEMA = "agent_turn_recall_v0"
SITUATION_SCHEMA = "agent_turn_situation_v0"
CONTEXT_SCHEMA = "agent_turn_recall_context_v0"
QUOTA_SCHEMA = "loopx_quota_decision_v0"
HOST_PACKET_SCHEMA = "loopx_turn_host_packet_v0"
RECEIPT_SCHEMA = "agent_turn_recall_receipt_v1"

TURN_START_RESULT_SCHEMA = "loopx_turn_start_capability_hook_result_v0"
TURN_START_DISPATCH_SCHEMA = "loopx_turn_start_capability_hook_dispatch_v0"
CAPSULE_SCHEMA = "loopx_turn_capsule_v0"
CAPSULE_VERIFICATION_SCHEMA = "loopx_turn_capsule_verification_v0"
CAPSULE_ALGORITHM = "HMAC-SHA256"
CAPSULE_VALID = "valid"
CAPSULE_INVALID = "invalid"
#: Why a capsule is ``invalid`` (never more: no key, no expected signature).
CAPSULE_REASONS = ("malformed", "tampered", "expired", "scope_mismatch")
#: How long a signed capsule stays valid after it was issued.
CAPSULE_TTL_SECONDS = 3600
PREFERENCES_VIEW_SCHEMA = "agent_preferences_v1"
#: LoopX's quota packet names itself by ``mode`` (``loopx quota should-run``).
QUOTA_MODE = "should-run"
#: LoopX's heartbeat receipt statuses a packet may carry (``agent-turn-recall``).
HEARTBEAT_STATUSES = ("committed", "replayed")

SURFACE = "agent_workflow.turn_admission"
PREFERENCE_HOOK_ID = "semantic_preference.agent_context"
PREFERENCE_CAPABILITY_ID = "semantic-preference"

# Statuses of ``agent_turn_recall_v0``.
PREVIEW = "preview"
DISABLED = "disabled"
APPLIED = "applied"
EMPTY = "empty"
NOTHING_RELEVANT = "nothing_relevant"  # empty: no memory clears the relevance floor
REPLAYED = "replayed"
DEGRADED = "degraded"
STATUSES = (PREVIEW, DISABLED, APPLIED, EMPTY, REPLAYED, DEGRADED)

# Turn-start hook observation statuses and error codes.
OBSERVED = "observed"
HOOK_EMPTY = "empty"
UNAVAILABLE = "unavailable"
# The preference hook's error codes are defined once, by the preference selector.
PERMISSION_DENIED = pref_selectors.PERMISSION_DENIED
UNREADABLE = pref_selectors.UNREADABLE

MAX_RECENT_OUTCOMES = 3
MAX_GUIDANCE = 4
MAX_TEXT = 320
#: Size budget of the turn-start dispatch inside a host packet; obligations
#: (``required_reads``, ``failures``) are never trimmed, only context bodies.
MAX_DISPATCH_BYTES = 16_000
MAX_PACKET_BYTES = 64_000
MAX_TURN_ID = 200
MAX_SESSION_REF = 200

#: The flags of every ``agent_turn_recall_v0`` document, errors and ``disabled`` too.
ERROR_BOUNDARY = {
    "grants_new_action_authority": False,
    "quota_spend_performed": False,
    "external_writes_performed": False,
    "suppress_external_sinks": True,
}
#: …and of every document that reached the recall (LoopX adds the fail-open pair there).
BOUNDARY = {
    **ERROR_BOUNDARY,
    "provider_failure_is_user_gate": False,
    "fail_open": True,
}
