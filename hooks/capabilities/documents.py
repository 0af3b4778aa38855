"""Documents the app-internal capabilities emit (their reducers' decisions)."""

from typing import Any

TRIGGER_DECISION_SCHEMA = "periodic_report_trigger_decision_v0"


def trigger_decision(
    intent: dict, *, decision: str, reason: str, promoted_by: str | None, next_stage: str | None
) -> dict[str, Any]:
    """``periodic_report_trigger_decision_v0``: what ``reduce_trigger`` decided for one
    trigger-evaluation intent (nothing rendered or sent)."""
    payload = intent["payload"]
    return {
        "schema_version": TRIGGER_DECISION_SCHEMA,
        "policy_version": intent["policy_version"],
        "source_intent_id": intent["intent_id"],
        "decision": decision,
        "reason": reason,
        "report_window": payload["report_window"],
        "segment_ref": payload["segment_ref"],
        "promoted_by": promoted_by,
        "next_stage": next_stage,
        "external_write_performed": False,
        "sink_called": False,
    }
