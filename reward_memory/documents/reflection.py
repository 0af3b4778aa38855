"""Reflection documents: the server-built (or operator-recorded)
``reward_memory_reflection_validation_v0`` (a stored receipt: rendered once, when the
service stores it on the reflection candidate) and the
``turn_reward_memory_reflection_result_v0`` a settlement or an operator's validation
answers (``outcome``)."""

from typing import Any

from loopx_site.core import clock
from reward_memory import contracts as c

RESULT_SCHEMA = "turn_reward_memory_reflection_result_v0"


def validator_validation(
    *, reflection_digest: str, evidence_refs: list[str], run: dict[str, Any]
) -> dict[str, Any]:
    """The server's validation from one declared validator run."""
    return {
        "schema_version": c.REFLECTION_VALIDATION_SCHEMA,
        "status": "passed" if run.get("status") == "passed" else "failed",
        "reflection_digest": reflection_digest,
        "evidence_refs": list(evidence_refs),
        "validated_by": {
            "kind": "validator",
            "validator_id": run.get("validator_id"),
            "manifest_digest": run.get("manifest_digest"),
        },
        "failure_kind": run.get("failure_kind"),
        "checks": list(run.get("checks") or []),
        "output_digest": run.get("output_digest"),
        "receipt_id": run.get("receipt_id"),
        "validated_at": clock.iso(clock.now()),
    }


def operator_validation(
    *,
    status: str,
    reflection_digest: str,
    evidence_refs: list[str],
    actor: str,
    evidence_ref: str | None,
) -> dict[str, Any]:
    """A validation an operator records by hand, attributed to their account."""
    return {
        "schema_version": c.REFLECTION_VALIDATION_SCHEMA,
        "status": status,
        "reflection_digest": reflection_digest,
        "evidence_refs": list(evidence_refs),
        "validated_by": {"kind": "operator", "actor": actor},
        "failure_kind": None if status == "passed" else "operator_failed",
        "checks": [],
        "operator_evidence_ref": evidence_ref,
        "validated_at": clock.iso(clock.now()),
    }


def preview_result(
    *, reflection_digest: str, experiment_status: str, caller_validation_ignored: bool
) -> dict[str, Any]:
    """A settlement preview: nothing stored, nothing run."""
    return {
        "ok": True,
        "schema_version": RESULT_SCHEMA,
        "status": "preview",
        "reflection_digest": reflection_digest,
        "experiment_status": experiment_status,
        "provider_call_count": 0,
        "validator_run_count": 0,
        "caller_validation_ignored": caller_validation_ignored,
    }


def outcome(result) -> dict[str, Any]:
    """``turn_reward_memory_reflection_result_v0`` of a
    ``services.reflection.ReflectionOutcome``: a settlement preview (nothing stored), or
    the stored candidate's state (an operator's preview adds the validation it would
    record)."""
    if result.row is None:
        return preview_result(
            reflection_digest=result.digest,
            experiment_status=result.route.status,
            caller_validation_ignored=result.caller_validation_ignored,
        )
    extra = {}
    if result.validator_run_count is not None:
        extra["validator_run_count"] = result.validator_run_count
    if result.caller_validation_ignored is not None:
        extra["caller_validation_ignored"] = result.caller_validation_ignored
    document = stored_state(
        result.row,
        result.route,
        result.receipt,
        result.provider_calls,
        validation_matched=result.validation_matched,
        **extra,
    )
    if result.would_record is None:
        return document
    return {**document, "status": "preview", "would_record": result.would_record}


def stored_state(
    row, route, receipt, provider_calls, *, validation_matched: bool, **extra
) -> dict[str, Any]:
    """The stored candidate's state after a settlement or an operator's validation."""
    validation = row.validation if isinstance(row.validation, dict) else None
    return {
        "ok": True,
        "schema_version": RESULT_SCHEMA,
        "status": row.status,
        "reflection_digest": row.reflection_digest,
        "turn_settled": row.turn_settled,
        "validation_matched": validation_matched,
        "validation": validation,
        "experiment_status": route.status,
        "automatic_ingest": route.automation["automatic_ingest"],
        "ingest_status": (receipt or {}).get("status"),
        "record_ref": (receipt or {}).get("record_ref"),
        "provider_call_count": provider_calls,
        "fail_open": True,
        "user_gate": False,
        **extra,
    }
