"""Operator authority documents: checkpoint grant / revocation / list and the reopening
of a candidate lineage."""

from typing import Any

from reward_memory.documents import registry

CHECKPOINT_GRANT_SCHEMA = "reward_memory_checkpoint_grant_v0"
CHECKPOINT_REVOCATION_SCHEMA = "reward_memory_checkpoint_revocation_v0"
CHECKPOINT_LIST_SCHEMA = "reward_memory_checkpoint_list_v0"
LINEAGE_REOPEN_SCHEMA = "reward_memory_lineage_reopen_v0"


def checkpoint_grant(outcome) -> dict[str, Any]:
    """``reward_memory_checkpoint_grant_v0`` of a ``CheckpointOutcome`` (``checkpoint``
    is ``None`` until granted)."""
    row = outcome.row
    return {
        "schema_version": CHECKPOINT_GRANT_SCHEMA,
        "status": outcome.status,
        "executed": outcome.executed,
        "checkpoint_id": outcome.checkpoint_id,
        "checkpoint": registry.checkpoint_payload(row) if row else None,
    }


def checkpoint_revocation(outcome) -> dict[str, Any]:
    """``reward_memory_checkpoint_revocation_v0`` of a ``CheckpointOutcome``: the
    checkpoint and its derived records."""
    return {
        "schema_version": CHECKPOINT_REVOCATION_SCHEMA,
        "status": outcome.status,
        "executed": outcome.executed,
        "checkpoint_id": outcome.checkpoint_id,
        "derived_active_records": outcome.derived_active_records,
        "records_revoked": outcome.records_revoked,
        "checkpoint": registry.checkpoint_payload(outcome.row),
    }


def checkpoint_list(rows) -> dict[str, Any]:
    """``reward_memory_checkpoint_list_v0``."""
    return {
        "schema_version": CHECKPOINT_LIST_SCHEMA,
        "checkpoints": [registry.checkpoint_payload(r) for r in rows],
    }


def lineage_reopen(reopening) -> dict[str, Any]:
    """``reward_memory_lineage_reopen_v0`` of a ``services.authority.Reopening``
    (``planned`` unless executed)."""
    closure, executed = reopening.closure, reopening.executed
    return {
        "schema_version": LINEAGE_REOPEN_SCHEMA,
        "status": "reopened" if executed else "planned",
        "executed": executed,
        "corpus_id": closure.corpus.corpus_id,
        "candidate_ref": closure.candidate_ref,
        "closed_reason": closure.reason,
    }
