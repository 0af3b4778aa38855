"""Ingest documents: ``reward_memory_ingest_receipt_v0`` (planned, activated, blocked
or a fail-open status) and ``reward_memory_ingest_reconciliation_v0``."""

import hashlib
from typing import Any

from loopx_site.core import clock
from loopx_site.core.canonical import digest_ref
from reward_memory import contracts as c
from reward_memory.documents import review as review_documents
from reward_memory.domain import guards

SETUP_GUIDANCE = (
    "The corpus provider is not reachable; the event is kept for a retry at the next "
    "turn start. Check the provider with `manage.py reward_memory corpora`."
)


#: The check a registered standing policy makes before any provider call (LoopX's words).
INGEST_GUARD_RULE = (
    "standing_policy_checks_exact_owner_class_source_actor_scope_and_authority_"
    "without_semantic_routing"
)

#: LoopX's adapter schema for each of our adapters (its ingest receipt names it).
LOOPX_ADAPTER_SCHEMAS = {
    "scoped_feedback": "scoped_feedback_reward_memory_candidate_adapter_v0",
    "issue_fix_maintainer_feedback": c.ISSUE_FIX_ADAPTER_SCHEMA,
}


def ingest(outcome) -> dict[str, Any]:
    """The answer to an ingest (``services.ingest.IngestOutcome``): the receipt stored on
    the event row as written; for a replay, that receipt with the present beside it
    (``replay``); when nothing was stored (a preview, an event blocked before it had a
    row), its judgement rendered (``receipt``)."""
    if outcome.stored is None:
        return receipt(outcome.judgement)
    if outcome.present is None:
        return outcome.stored
    present = outcome.present
    return replay(outcome.stored, present.record_state, present.available, present.reasons)


def receipt(judgement) -> dict[str, Any]:
    """``reward_memory_ingest_receipt_v0`` of one judged event (the service's
    ``Judgement``: its ``IngestEvaluation`` — event, corpus, policy and scope — with its
    status and, once executed, the activation's plan and outcome); ``receipt_id`` is a
    digest of its stable fields, so the same event and outcome has the same id."""
    context, status, plan = judgement.evaluation, judgement.status, judgement.plan
    outcome, duplicate, executed = judgement.outcome, judgement.duplicate, judgement.executed
    evaluation, corpus = context.adapted.evaluation, context.corpus
    event_ref, goal_id, agent_id = context.adapted.event_ref, context.goal_id, context.agent_id
    policy_digest, record_ref = context.policy_digest, judgement.record_ref
    candidate = evaluation.candidate or {}
    scope = candidate.get("scope") or {}
    target_digest = digest_ref(plan.resource_ref) if plan else None
    retryable = status in c.INGEST_RETRYABLE
    reason_payload = guards.payload(judgement.reasons)
    quality = _experience_quality(candidate, reason_payload)
    return {
        "ok": True,
        "schema_version": c.INGEST_RECEIPT_SCHEMA,
        "receipt_id": judgement.receipt_id,
        "status": status,
        "executed": executed,
        "adapter": context.adapted.adapter.adapter_id,
        "event_ref": event_ref,
        "goal_id": goal_id,
        "agent_id": agent_id,
        "corpus_id": corpus.corpus_id,
        "surface": scope.get("surface"),
        "memory_class": candidate.get("target_class"),
        "candidate_ref": evaluation.candidate_ref,
        "candidate_digest": evaluation.candidate_digest,
        "policy_digest": policy_digest,
        "record_ref": record_ref,
        "content_digest": judgement.content_digest,
        "observed_at": clock.iso(judgement.observed_at),
        "memory_available_for_recall": status == c.INGEST_ACTIVATED,
        "record_state": c.ACTIVE if status == c.INGEST_ACTIVATED else None,
        "replayed": False,
        "deduplicated": bool(outcome and outcome.deduplicated),
        "duplicate_of": duplicate_of(duplicate, added=executed and status == c.INGEST_ACTIVATED),
        "readback": outcome.readback if outcome else None,
        "source_verification": context.source_verification(),
        "provider_call_count": outcome.provider_calls if outcome else 0,
        "provider": {
            "provider_id": corpus.provider_id,
            "binding_ref": corpus.provider_binding_ref,
            "target_ref_digest": target_digest,
        },
        "guard": _guard(status, reason_payload, quality),
        "experience_quality": quality,
        **_loopx_fields(context, status, executed=executed, outcome=outcome),
        "retry": {"sidecar": True, "when": "next_turn_start"} if retryable else None,
        "setup_guidance": SETUP_GUIDANCE if status == c.INGEST_PROVIDER_UNAVAILABLE else None,
        "fail_open": True,
        "user_gate": False,
    }


def replay(stored: dict[str, Any], state: str, available: bool, reasons) -> dict[str, Any]:
    """The answer to an activated event submitted again: the receipt stored at its first
    execution, unchanged (same ``receipt_id``), with the present beside it —
    ``deduplicated``/``replayed``, the record's ``record_state`` and
    ``memory_available_for_recall`` now, and the ``guard`` as it evaluates now."""
    return {
        **stored,
        "deduplicated": True,
        "replayed": True,
        "record_state": state,
        "memory_available_for_recall": available,
        "guard": {
            **(stored.get("guard") or {}),  # LoopX's rule and experience gate as stored
            "status": c.GUARD_BLOCKED if reasons else c.GUARD_PASSED,
            "passed": not reasons,
            "reasons": guards.payload(reasons),
            "reason_codes": [r["code"] for r in guards.payload(reasons)],
        },
    }


def duplicate_of(duplicate, *, added: bool) -> dict[str, Any] | None:
    """The record an event's candidate restates, by ref and similarity (no text: the
    submitter reads the record through recall, as any other); ``evidence_added`` once
    the event's evidence joined it (a preview only says it would)."""
    if duplicate is None:
        return None
    payload = duplicate.payload("")
    return {
        "record_ref": payload["record_ref"],
        "similarity": payload["similarity"],
        "token_jaccard": payload["token_jaccard"],
        "method": payload["method"],
        "threshold": payload["threshold"],
        "evidence_added": added,
    }


def _loopx_fields(context, status: str, *, executed: bool, outcome) -> dict[str, Any]:
    """LoopX's own ingest receipt fields (docs/loopx-hosts.md "Ingest input")."""
    policy_document = (context.policy.document if context.policy is not None else None) or {}
    wrote = bool(
        executed
        and status == c.INGEST_ACTIVATED
        and context.corpus.provider_id != "local"
        and not (outcome and outcome.deduplicated)
    )
    surface = ((context.adapted.evaluation.candidate or {}).get("scope") or {}).get("surface")
    return {
        "policy_id": policy_document.get("policy_id"),
        "surface_ids": [surface] if surface else [],
        "feedback_ref": _feedback_ref(context.adapted.event),
        "event_summary_digest": _summary_digest(context.adapted.event),
        "exact_readback_verified": bool(
            status == c.INGEST_ACTIVATED and outcome and outcome.readback
        ),
        "grants_new_action_authority": False,
        "raw_content_captured": False,
        "raw_provider_payload_captured": False,
        "external_writes_performed": wrote,
        "provider_failure_is_user_gate": False,
        "adapter_schema_version": LOOPX_ADAPTER_SCHEMAS.get(context.adapted.adapter.adapter_id),
        "event_schema_version": context.adapted.event.get("schema_version"),
        "next_reward_memory_call": "explicit_function_boundary_recall",
    }


def reconciliation(result) -> dict[str, Any]:
    """``reward_memory_ingest_reconciliation_v0`` of a ``services.ingest.Reconciliation``:
    one Agent's sidecar retry (``skipped`` with the experiment status when automatic
    ingest is off)."""
    document: dict[str, Any] = {
        "schema_version": c.RECONCILIATION_SCHEMA,
        "goal_id": result.goal_id,
        "agent_id": result.agent_id,
        "attempted": result.attempted,
        "activated": result.activated,
        "still_pending": result.still_pending,
        "blocked": result.blocked,
    }
    if result.skipped is not None:
        document["skipped"] = result.skipped
        document["experiment_status"] = result.experiment_status
    document["receipts"] = [_reconciled(event) for event in result.events]
    return document


def _reconciled(event) -> dict[str, Any]:
    if event.error is not None:
        return {"event_ref": event.event_ref, "error": event.error}
    return {"event_ref": event.event_ref, "status": event.status, "receipt_id": event.receipt_id}


def _feedback_ref(event: dict[str, Any]) -> str | None:
    """LoopX's ``feedback_ref``: the event's own reference (LoopX's field, mapped onto our
    ``event_id``)."""
    return event.get("feedback_ref") or event.get("event_id")


def _summary_digest(event: dict[str, Any]) -> str | None:
    """LoopX's ``event_summary_digest``: the first 16 hex digits of the SHA-256 of the
    event's content summary with its whitespace collapsed."""
    summary = " ".join(str(event.get("content_summary") or "").split())
    return hashlib.sha256(summary.encode("utf-8")).hexdigest()[:16] if summary else None


def _experience_quality(candidate: dict[str, Any], reasons: list[dict]) -> dict[str, Any]:
    """LoopX's ``experience_quality`` gate: required for ``procedural_experience`` only,
    decided by our guards; a usefulness claim is never made (``value_status``)."""
    procedural = candidate.get("target_class") == c.PROCEDURAL_EXPERIENCE
    codes = [r["code"] for r in reasons] if procedural else []
    return {
        "required": procedural,
        "passed": not codes,
        "status": ("blocked" if codes else "passed") if procedural else "not_applicable",
        "contract_version": review_documents.EXPERIENCE_CONTRACT,
        "reason_codes": codes,
        "value_status": "unproven",
    }


def _guard(status: str, reasons: list[dict], quality: dict[str, Any]) -> dict[str, Any]:
    """Our guard verdict with LoopX's verdict fields: our guards' codes (as in
    candidate-review), the rule a registered standing policy applies, the experience gate."""
    return {
        "status": c.GUARD_BLOCKED if status == c.GUARD_BLOCKED else c.GUARD_PASSED,
        "passed": status != c.GUARD_BLOCKED,
        "reasons": reasons,
        "reason_codes": [r["code"] for r in reasons],
        "experience_quality": quality,
        "semantic_reasoning_preserved": True,
        "rule": INGEST_GUARD_RULE,
    }
