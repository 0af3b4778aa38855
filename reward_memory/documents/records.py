"""Record lifecycle documents: ``reward_memory_record_operation_v0`` (a revoke / retire /
supersede / mark, previewed or performed), ``reward_memory_provider_deletion_v0`` and
``reward_memory_expiry_sweep_v0``."""

from typing import Any

from reward_memory.documents import registry
from reward_memory.models import MemoryRecord

RECORD_OPERATION_SCHEMA = "reward_memory_record_operation_v0"
EXPIRY_SWEEP_SCHEMA = "reward_memory_expiry_sweep_v0"
EMBED_BACKFILL_SCHEMA = "reward_memory_embed_backfill_v0"
PROVIDER_DELETION_SCHEMA = "reward_memory_provider_deletion_v0"


def readback(lifecycle_state: str) -> dict[str, Any]:
    """A record's lifecycle state read back (``selectors.fresh_lifecycle_state``) and
    whether recall may still return it."""
    return {"lifecycle_state": lifecycle_state, "recallable": lifecycle_state == "active"}


def record_operation(result) -> dict[str, Any]:
    """``reward_memory_record_operation_v0`` of a ``services.records.RecordOperation``: a
    revoke / retire / supersede / mark, as previewed (``executed: false``) or performed,
    with the performed write read back."""
    document: dict[str, Any] = {
        "schema_version": RECORD_OPERATION_SCHEMA,
        "operation": result.operation,
        "executed": result.executed,
        "record": registry.record_public(result.record),
    }
    if result.executed:
        document["readback"] = readback(result.lifecycle_state)
        document["provider_deletion"] = result.provider_deletion
    return document


def provider_deletion(record: MemoryRecord, deletion: dict[str, Any] | None) -> dict[str, Any]:
    """``reward_memory_provider_deletion_v0``: a record's lifecycle state and its provider
    delete (``selectors.provider_deletion_state``; ``null``: nothing queued — a live
    record, or one closed before the outbox)."""
    return {
        "schema_version": PROVIDER_DELETION_SCHEMA,
        "record": registry.record_public(record),
        "provider_deletion": deletion,
    }


def expiry_sweep(sweep) -> dict[str, Any]:
    """``reward_memory_expiry_sweep_v0`` of a ``services.records.ExpirySweep``: how many
    active records were due, how many closed."""
    return {
        "schema_version": EXPIRY_SWEEP_SCHEMA,
        "executed": sweep.executed,
        "due": len(sweep.due),
        "expired": len(sweep.expired),
    }


def embed_backfill(result) -> dict[str, Any]:
    """``reward_memory_embed_backfill_v0``: local provider documents without a vector, and
    how many an executed backfill filled."""
    return {
        "schema_version": EMBED_BACKFILL_SCHEMA,
        "executed": result.executed,
        "missing": result.missing,
        "filled": result.filled,
    }
