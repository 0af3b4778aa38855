"""Stage 3's documents: the private recall result with its public packet, LoopX's
``reward_memory_recall_v0`` answer, and the application receipt.

``reward_memory.services.recalls`` decides; these render (the public packet is what a
``RecallReceipt`` stores).
"""

from typing import Any

from loopx_site.core import clock
from loopx_site.core.canonical import digest_ref, text_digest_ref
from reward_memory import contracts as c
from reward_memory.documents import registry
from reward_memory.domain import guards
from reward_memory.domain.recall_request import Application
from reward_memory.models import MemoryRecord

LOOPX_RECALL_SCHEMA = "reward_memory_recall_v0"
SETUP_GUIDANCE = (
    "The corpus provider is not reachable; continue with the original output. Check the "
    "provider binding with `manage.py reward_memory corpora` (health: index_present)."
)


def private_item(record: MemoryRecord) -> dict[str, Any]:
    authority = record.authority or {}
    return {
        "memory_ref": record.record_ref,
        "memory_ref_digest": digest_ref(record.record_ref),
        "candidate_ref": record.candidate_ref,
        "memory_class": record.memory_class,
        "summary": record.summary,
        "confidence": record.confidence_level,
        "authority": authority.get("kind", "advisory"),
        "action_scopes": authority.get("action_scopes", []),
        "requires_artifact_verification": record.memory_class == c.PROCEDURAL_EXPERIENCE,
        "applicability_note": applicability(record),
        "expires_at": clock.iso(record.expires_at),
    }


def applicability(record: MemoryRecord) -> str:
    if record.memory_class == c.HARD_POLICY:
        return "constraint inside its verified action scopes only; grants nothing new"
    if record.memory_class == c.PROCEDURAL_EXPERIENCE:
        return "advice only after verification against the current artifact"
    if record.memory_class == c.RUN_BOUND_REWARD:
        return "evidence about one run; not an instruction"
    if record.memory_class == c.WORKING_CONTEXT:
        return "current execution only; current source of truth wins"
    return "advisory ranking or rewrite only"


def public_packet(recalled) -> dict[str, Any]:
    """The public packet of a ``services.recalls.RecallOutcome`` (digests and compact
    lineage; what its ``RecallReceipt`` stores)."""
    request, reasons = recalled.request, recalled.reasons
    return {
        "schema_version": c.RECALL_PACKET_SCHEMA,
        "recall_id": recalled.recall_id,
        "status": recalled.status,
        "goal_id": request.goal_id,
        "agent_id": request.agent_id,
        "corpus_id": request.corpus_id,
        "surface": request.surface,
        "mode": request.mode,
        "query_count": len(request.queries),
        "query_digests": [text_digest_ref(q) for q in request.queries],
        "items": [registry.record_public(r) for r in recalled.records],
        "filtered": recalled.filtered or {},
        "provider_calls": recalled.calls,
        "failure_kind": recalled.failure_kind,
        "guard": {
            "status": c.GUARD_BLOCKED if reasons else c.GUARD_PASSED,
            "reasons": guards.payload(reasons or []),
        },
        "authority_derived_from_hits": False,
        "user_gate": False,
    }


def recall_result(recalled) -> dict[str, Any]:
    """The private result of a ``services.recalls.RecallOutcome`` with its public packet
    (``reason`` when an empty recall says why; ``replayed``/``replay_dropped`` for a
    replay of a stored recall) — or, for LoopX's packet, LoopX's ``reward_memory_recall_v0``
    over it."""
    request, status = recalled.request, recalled.status
    packet = public_packet(recalled)
    result = {
        "schema_version": c.RECALL_RESULT_SCHEMA,
        "status": status,
        "recall_id": recalled.recall_id,
        "corpus_id": request.corpus_id,
        "surface": request.surface,
        "mode": request.mode,
        "items": [private_item(r) for r in recalled.records],
        "provider_calls": recalled.calls,
        "setup_guidance": SETUP_GUIDANCE if status == "provider_unavailable" else None,
        "guard": packet["guard"],
        "public_packet": packet,
    }
    if recalled.reason is not None:
        result["reason"] = recalled.reason
    if recalled.replayed:
        result["replayed"] = True
        result["replay_dropped"] = recalled.replay_dropped
    if recalled.loopx_request is not None:
        return loopx_answer(result, recalled.loopx_request)
    return result


def loopx_answer(result: dict[str, Any], inner: dict[str, Any]) -> dict[str, Any]:
    """LoopX's ``reward_memory_recall_v0`` fields over our private result."""
    status = c.LOOPX_RECALL_STATUS.get(result["status"], result["status"])
    items = result["items"]
    return {
        **result,
        "ok": True,
        "schema_version": LOOPX_RECALL_SCHEMA,
        "result_schema_version": c.RECALL_RESULT_SCHEMA,
        "status": status,
        "surface_id": result["surface"],
        "query_kind": inner.get("query_kind") or "business_recall",
        "result_count": len(items),
        "results": [
            {
                "memory_ref": item["memory_ref_digest"],
                "candidate_ref": item["candidate_ref"],
                "target_class": item["memory_class"],
                "content_summary": None,
                "content_exposed": False,
            }
            for item in items
        ],
        "result_readback_verified": bool(items),
        "provider_call_count": result["provider_calls"],
        "reason_codes": [r["code"] for r in result["guard"]["reasons"]],
        "automatic_recall": False,
        "fail_open": True,
        "provider_failure_is_user_gate": False,
        "external_writes_performed": False,
        "raw_provider_payload_captured": False,
        "raw_content_persisted": False,
    }


def application(outcome) -> dict[str, Any]:
    """The answer to an application (``services.recalls.ApplicationOutcome``): the receipt
    as it was stored once recorded; a preview's (or a refused application's) rendered."""
    if outcome.stored is not None:
        return outcome.stored
    return application_receipt(outcome.recall, outcome.application, outcome.verdict)


def application_receipt(
    stored: Any, application: Application, verdict, *, recorded: bool = False
) -> dict[str, Any]:
    """``reward_memory_application_receipt_v0`` for the stored recall ``stored`` and what
    the service decided about it (``services.recalls.Verdict``; ``recorded``: the one the
    service stores, rendered once as it is stored)."""
    return {
        "schema_version": c.APPLICATION_RECEIPT_SCHEMA,
        "application_receipt_id": verdict.receipt_id,
        "recall_id": stored.recall_id,
        "corpus_id": stored.corpus.corpus_id,
        "surface": stored.surface,
        "goal_id": stored.goal.goal_id,
        "agent_id": stored.agent.agent_id,
        "decision": application.decision,
        "status": verdict.status,
        "reasons": sorted(set(verdict.reasons)),
        "memory_ref_digests": verdict.ref_digests,
        "reasoning_summary": application.reasoning,
        "artifact_verification": verdict.artifact,
        "authority_scope_check": {
            "corpus_id": stored.corpus.corpus_id,
            "surface": stored.surface,
            "recall_status": stored.status,
            "attributed": verdict.attributed,
        },
        "original_output_kept": verdict.status != "applied",
        "user_gate": False,
        "recorded": recorded,
    }
