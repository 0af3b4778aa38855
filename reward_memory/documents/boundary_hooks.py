"""The boundary hook's documents: ``reward_memory_runtime_hook_v0`` (what ran, with the
bounded private context for the in-process caller) and its public-safe
``reward_memory_hook_application_receipt_v0`` (digests, statuses, call counts)."""

from typing import Any

from loopx_site.core.canonical import prefixed_id
from reward_memory.documents import recall as recall_documents

HOOK_SCHEMA = "reward_memory_runtime_hook_v0"
HOOK_RECEIPT_SCHEMA = "reward_memory_hook_application_receipt_v0"
#: a guidance item's summary, bounded for the in-process caller's context
MAX_SUMMARY_CHARS = 600


def guidance_item(record) -> dict[str, Any]:
    """One record of the hook's private context: its ref digest, class, bounded summary
    and whether it needs the artifact verified first."""
    item = recall_documents.private_item(record)
    return {
        "memory_ref_digest": item["memory_ref_digest"],
        "memory_class": item["memory_class"],
        "summary": str(item["summary"] or "")[:MAX_SUMMARY_CHARS],
        "requires_artifact_verification": item["requires_artifact_verification"],
    }


def boundary_hook(run) -> dict[str, Any]:
    """The document of a ``services.runtime_hooks.BoundaryHookRun``."""
    recall, ingest, route = run.recall, run.ingest, run.route
    items = [guidance_item(record) for record in run.records]
    receipt_body = {
        "schema_version": HOOK_RECEIPT_SCHEMA,
        "goal_id": run.goal_id,
        "agent_id": run.agent_id,
        "boundary": run.boundary,
        "status": run.status,
        "experiment_status": route.status,
        "recall_status": recall["status"] if recall else None,
        "recall_id": recall["recall_id"] if recall else None,
        "memory_refs": [i["memory_ref_digest"] for i in items],
        "ingest_status": ingest["status"] if ingest else None,
        "ingest_receipt_id": ingest["receipt_id"] if ingest else None,
        "provider_call_count": run.provider_call_count,
    }
    return {
        "ok": True,
        "schema_version": HOOK_SCHEMA,
        "status": run.status,
        "executed": run.executed,
        "goal_id": run.goal_id,
        "agent_id": run.agent_id,
        "boundary": run.boundary,
        "experiment_status": route.status,
        "automation": route.automation,
        "skip_reason": run.skip_reason,
        "recall_planned": run.recall_planned,
        "ingest_planned": run.ingest_planned,
        "recall": recall,
        "ingest": ingest,
        # private: bounded summaries for the in-process caller only
        "context": {"guidance": items},
        "application_receipt": {
            **receipt_body,
            "receipt_id": prefixed_id("rmhr_", receipt_body),
        },
        "provider_call_count": run.provider_call_count,
        "original_output_kept": True,
        "fail_open": True,
        "user_gate": False,
        "grants_new_action_authority": False,
    }
