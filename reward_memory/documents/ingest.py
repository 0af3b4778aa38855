"""Ingest documents: ``reward_memory_ingest_receipt_v0`` (planned, activated, blocked
or a fail-open status) and ``reward_memory_ingest_reconciliation_v0``."""

from typing import Any

from loopx_site.core import clock
from loopx_site.core.canonical import digest_ref, prefixed_id
from reward_memory import contracts as c
from reward_memory.domain import guards
from reward_memory.domain.guards import Reason

SETUP_GUIDANCE = (
    "The corpus provider is not reachable; the event is kept for a retry at the next "
    "turn start. Check the provider with `manage.py reward_memory corpora`."
)


#: LoopX's adapter schema for each of our adapters (its ingest receipt names it).
LOOPX_ADAPTER_SCHEMAS = {
    "scoped_feedback": "scoped_feedback_reward_memory_candidate_adapter_v0",
    "issue_fix_maintainer_feedback": c.ISSUE_FIX_ADAPTER_SCHEMA,
}


def receipt(
    context,
    status: str,
    *,
    executed: bool,
    observed_at,
    outcome,
    plan,
    reasons: list[Reason],
    duplicate=None,
) -> dict[str, Any]:
    """``reward_memory_ingest_receipt_v0`` of an ingest in progress (``context``: the
    service's event, corpus, policy and scope); ``receipt_id`` is a digest of its stable
    fields, so the same event and outcome has the same id. ``duplicate``
    (``services.duplicates.Match``): the live record the candidate restates — its
    evidence joins that record (``record_ref``) instead of a second active record."""
    evaluation, corpus = context.adapted.evaluation, context.corpus
    event_ref, goal_id, agent_id = context.adapted.event_ref, context.goal_id, context.agent_id
    policy_digest, record_ref = context.policy_digest, context.record_ref(status)
    if duplicate is not None and record_ref is not None:
        record_ref = duplicate.record.record_ref
    candidate = evaluation.candidate or {}
    scope = candidate.get("scope") or {}
    target_digest = digest_ref(plan.resource_ref) if plan else None
    stable = {
        "status": status,
        "event_ref": event_ref,
        "goal_id": goal_id,
        "agent_id": agent_id,
        "candidate_ref": evaluation.candidate_ref,
        "record_ref": record_ref,
        "policy_digest": policy_digest,
        "content_digest": plan.content_digest if plan else None,
    }
    retryable = status in c.INGEST_RETRYABLE
    return {
        "ok": True,
        "schema_version": c.INGEST_RECEIPT_SCHEMA,
        "receipt_id": prefixed_id("rmir_", stable),
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
        "content_digest": plan.content_digest if plan else None,
        "observed_at": clock.iso(observed_at),
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
        "guard": {
            "status": c.GUARD_BLOCKED if status == c.GUARD_BLOCKED else c.GUARD_PASSED,
            "passed": status != c.GUARD_BLOCKED,
            "reasons": guards.payload(reasons),
        },
        **_loopx_fields(context, status, executed=executed, outcome=outcome),
        "retry": {"sidecar": True, "when": "next_turn_start"} if retryable else None,
        "setup_guidance": SETUP_GUIDANCE if status == c.INGEST_PROVIDER_UNAVAILABLE else None,
        "fail_open": True,
        "user_gate": False,
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
    policy_document = getattr(getattr(context, "policy", None), "document", None) or {}
    wrote = bool(
        executed
        and status == c.INGEST_ACTIVATED
        and context.corpus.provider_id != "local"
        and not (outcome and outcome.deduplicated)
    )
    return {
        "policy_id": policy_document.get("policy_id"),
        "external_writes_performed": wrote,
        "provider_failure_is_user_gate": False,
        "adapter_schema_version": LOOPX_ADAPTER_SCHEMAS.get(context.adapted.adapter.adapter_id),
        "event_schema_version": context.adapted.event.get("schema_version"),
        "next_reward_memory_call": "explicit_function_boundary_recall",
    }


def reconciliation(
    *,
    goal_id: str,
    agent_id: str,
    summary: dict[str, int],
    receipts: list[dict[str, Any]],
    skipped: str | None = None,
    experiment_status: str | None = None,
) -> dict[str, Any]:
    """``reward_memory_ingest_reconciliation_v0``: one Agent's sidecar retry (``skipped``
    with the experiment status when automatic ingest is off)."""
    document: dict[str, Any] = {
        "schema_version": c.RECONCILIATION_SCHEMA,
        "goal_id": goal_id,
        "agent_id": agent_id,
        **summary,
    }
    if skipped is not None:
        document["skipped"] = skipped
        document["experiment_status"] = experiment_status
    document["receipts"] = receipts
    return document
