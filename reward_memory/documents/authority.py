"""Operator authority documents: checkpoint grant / revocation / list and the reopening
of a candidate lineage."""

from typing import Any

from reward_memory.documents import registry
from reward_memory.models import AuthorityCheckpoint, LineageClosure

CHECKPOINT_GRANT_SCHEMA = "reward_memory_checkpoint_grant_v0"
CHECKPOINT_REVOCATION_SCHEMA = "reward_memory_checkpoint_revocation_v0"
CHECKPOINT_LIST_SCHEMA = "reward_memory_checkpoint_list_v0"
LINEAGE_REOPEN_SCHEMA = "reward_memory_lineage_reopen_v0"


def checkpoint_grant(
    *, status: str, executed: bool, checkpoint_id: str, row: AuthorityCheckpoint | None
) -> dict[str, Any]:
    """``reward_memory_checkpoint_grant_v0`` (``checkpoint`` is ``None`` until granted)."""
    return {
        "schema_version": CHECKPOINT_GRANT_SCHEMA,
        "status": status,
        "executed": executed,
        "checkpoint_id": checkpoint_id,
        "checkpoint": registry.checkpoint_payload(row) if row else None,
    }


def checkpoint_revocation(
    *,
    status: str,
    executed: bool,
    row: AuthorityCheckpoint,
    derived_active_records: int,
    records_revoked: int,
) -> dict[str, Any]:
    """``reward_memory_checkpoint_revocation_v0``: the checkpoint and its derived records."""
    return {
        "schema_version": CHECKPOINT_REVOCATION_SCHEMA,
        "status": status,
        "executed": executed,
        "checkpoint_id": row.checkpoint_id,
        "derived_active_records": derived_active_records,
        "records_revoked": records_revoked,
        "checkpoint": registry.checkpoint_payload(row),
    }


def checkpoint_list(rows) -> dict[str, Any]:
    """``reward_memory_checkpoint_list_v0``."""
    return {
        "schema_version": CHECKPOINT_LIST_SCHEMA,
        "checkpoints": [registry.checkpoint_payload(r) for r in rows],
    }


def lineage_reopen(*, executed: bool, closure: LineageClosure, corpus_id: str) -> dict[str, Any]:
    """``reward_memory_lineage_reopen_v0`` (``planned`` unless executed)."""
    return {
        "schema_version": LINEAGE_REOPEN_SCHEMA,
        "status": "reopened" if executed else "planned",
        "executed": executed,
        "corpus_id": corpus_id,
        "candidate_ref": closure.candidate_ref,
        "closed_reason": closure.reason,
    }
