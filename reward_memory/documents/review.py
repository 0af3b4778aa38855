"""Candidate review documents: ``reward_memory_candidate_review_v0`` (as LoopX hosts read
it) and ``reward_memory_activation_receipt_v0`` (a recorded review's next step)."""

import hashlib
import json
from typing import Any

from loopx_site.core import clock
from loopx_site.core.canonical import digest_ref
from reward_memory import contracts as c
from reward_memory.domain import candidates
from reward_memory.models import Review

ACTIVATION_RECEIPT_SCHEMA = "reward_memory_activation_receipt_v0"


# LoopX's review document (``reward_memory_candidate_review_v0`` as LoopX hosts read it):
# the decision's status, the record the decision leaves, and the persistence next step.
REVIEW_STATUS = {
    "accept": "active",
    "edit": "review_ready",
    "reject": "rejected",
    "retire": "retired",
    "no_write": "no_write",
}


RETIRED_REASON = {
    "reject": "rejected_in_review",
    "retire": "reviewed_retirement",
    "no_write": "no_write_rationale",
}


PERSISTENCE_NEXT_STEP = "caller_uses_declared_corpus_write_authority_then_readback"
# LoopX's ``review.reasoning_summary``: what the review rested on (compact, no content)
REVIEW_REASONING = {
    "accept": "The compact evidence and scope were reviewed; the guards passed.",
    "edit": "The compact evidence and scope were reviewed; the summary was edited.",
    "reject": "The compact evidence and scope were reviewed and rejected.",
    "retire": "The compact evidence and scope were reviewed; the record is retired.",
    "no_write": "Nothing is written: the review or the guards decided no_write.",
}


def loopx_candidate_ref(candidate: dict[str, Any]) -> str:
    """LoopX's ``candidate:<20 hex>`` ref of a LoopX-layout candidate: the digest of its
    identity fields, computed as LoopX does, so equal candidates have equal refs."""
    identity = {
        key: candidate.get(key)
        for key in (
            "target_class",
            "content_summary",
            "source",
            "scope",
            "guard_context",
            "experience",
            "requested_action_scopes",
        )
    }
    text = json.dumps(identity, sort_keys=True, ensure_ascii=False).encode("utf-8")
    return "candidate:" + hashlib.sha256(text).hexdigest()[:20]


def loopx_candidate(candidate: dict[str, Any], *, state: str = "candidate") -> dict[str, Any]:
    """Our ``reward_memory_candidate_v0`` in LoopX's layout (``source_*``/``*_ref`` names,
    ``surface_ids``, ``reasoning``, ``guard_context``, ``privacy``, ``candidate:<hex>``);
    the inverse of ``reward_memory.domain.loopx``'s mapping of LoopX events."""
    source = candidate.get("source") or {}
    scope = candidate.get("scope") or {}
    freshness = candidate.get("freshness") or {}
    current = freshness.get("source_revision") == freshness.get("current_revision")
    loopx_scope = {
        "workspace_ref": scope.get("workspace"),
        "project_ref": scope.get("project"),
        "surface_ids": [scope["surface"]] if scope.get("surface") else [],
        "revision_ref": scope.get("repository_revision"),
    }
    record = {
        "schema_version": candidate.get("schema_version"),
        "target_class": candidate.get("target_class"),
        "content_summary": candidate.get("content_summary"),
        "source": {
            "source_kind": source.get("kind"),
            "source_ref": source.get("evidence_ref"),
            "actor_ref": source.get("actor"),
            "actor_role": source.get("actor_role"),
        },
        "scope": {k: val for k, val in loopx_scope.items() if val is not None},
        "reasoning": {
            "summary": candidate.get("reasoning_summary"),
            "confidence": (candidate.get("confidence") or {}).get("level"),
        },
        "guard_context": {
            "source_freshness": "current" if current else "stale",
            "conflict_state": "unresolved" if candidate.get("conflicts") else "clear",
            "current_artifact_verified": current,
        },
        "requested_action_scopes": list(candidate.get("requested_action_scopes") or []),
    }
    record["lifecycle"] = {"state": state, "supersedes_refs": []}
    record["privacy"] = {"raw_content_captured": False}
    record["candidate_ref"] = loopx_candidate_ref(record)
    return record


def loopx_fields(
    decision, effective, evaluation, revised, *, review_ref, reviewer, preview_review=None
):
    """LoopX's fields of the review: its status word, the ``record`` the decision leaves
    (LoopX's layout), the ``review`` (``preview_review``'s labels in a shipped case's
    preview, else the recorded reviewer and our review id) and the persistence next step."""
    blocked = decision in ("accept", "edit") and effective == "no_write"
    record = None
    if evaluation.candidate is not None:
        source = revised if (effective == "edit" and revised is not None) else evaluation
        record = loopx_candidate(source.candidate or {})
        if blocked:
            pass
        elif effective == "accept":
            record["lifecycle"]["state"] = "active"
        elif effective == "edit":
            prior = loopx_candidate(evaluation.candidate)["candidate_ref"]
            record["lifecycle"]["supersedes_refs"] = [prior]
        else:
            record["lifecycle"] = {
                "state": "retired",
                "supersedes_refs": [],
                "retired_reason": RETIRED_REASON[effective],
            }
    return {
        "ok": True,
        "status": "guard_blocked" if blocked else REVIEW_STATUS[effective],
        "guard_passed": not evaluation.blocked,
        "review": dict(preview_review)
        if preview_review
        else {
            "reviewer_ref": reviewer,
            "review_ref": review_ref,
            "reasoning_summary": REVIEW_REASONING[effective],
        },
        "record": record,
        "persistence_next_step": (
            PERSISTENCE_NEXT_STEP if effective in ("accept", "retire") else "none"
        ),
        "grants_new_action_authority": False,
        "provider_write_performed": False,
        "external_writes_performed": False,
        "raw_content_captured": False,
    }


GUARD_RULE = (
    "model_proposes_meaning_deterministic_guards_verify_scope_privacy_and_no_authority_expansion"
)
EXPERIENCE_CONTRACT = "procedural_experience_contract_v0"


def _loopx_checkpoint(candidate: dict[str, Any]) -> dict[str, Any]:
    """LoopX's ``authority_checkpoint`` of the shared candidate (only when it names one):
    its ``source_ref`` is the operator-granted checkpoint's id."""
    checkpoint = candidate.get("authority_checkpoint")
    if not isinstance(checkpoint, dict):
        return {}
    return {
        "authority_checkpoint": {
            "verified": bool(checkpoint.get("verified")),
            "source_ref": checkpoint.get("checkpoint_ref"),
            "actor_ref": checkpoint.get("actor"),
            "actor_role": checkpoint.get("role"),
            "project_ref": checkpoint.get("project"),
            "action_scopes": list(checkpoint.get("action_scopes") or []),
        }
    }


def _loopx_guard(evaluation: candidates.CandidateEvaluation) -> dict[str, Any]:
    """LoopX's guard verdict of the shared candidate (our guards decided it)."""
    codes = [r["code"] for r in evaluation.guard_payload()["reasons"]]
    procedural = (evaluation.candidate or {}).get("target_class") == c.PROCEDURAL_EXPERIENCE
    return {
        "passed": not evaluation.blocked,
        "reason_codes": codes,
        "rule": GUARD_RULE,
        "semantic_reasoning_preserved": True,
        "experience_quality": {
            "required": procedural,
            "passed": not (procedural and evaluation.blocked),
            "status": ("blocked" if evaluation.blocked else "passed")
            if procedural
            else "not_applicable",
            "contract_version": EXPERIENCE_CONTRACT,
            "reason_codes": codes if procedural else [],
            "value_status": "unproven",
        },
    }


def adapter_payload(document, adapter_id, evaluation) -> dict[str, Any] | None:
    """LoopX's adapter object: which pure field mapping produced the shared candidate
    (LoopX's ``shared_candidate`` packet, in LoopX's layout), with our ``adapter_id`` and
    ``shared_candidate_ref`` beside it."""
    if adapter_id is None:
        return None
    shared = None
    if evaluation.candidate is not None:
        shared = {
            "ok": True,
            "schema_version": evaluation.candidate.get("schema_version"),
            "status": "guard_blocked" if evaluation.blocked else "review_ready",
            "candidate": loopx_candidate(evaluation.candidate),
            **_loopx_checkpoint(evaluation.candidate),
            "guard": _loopx_guard(evaluation),
            "available_review_decisions": sorted(c.DECISIONS),
            "candidate_persisted": False,
            "provider_write_performed": False,
            "external_writes_performed": False,
            "raw_content_captured": False,
        }
    return {
        "ok": True,
        "schema_version": document.get("schema_version"),
        "issue_ref": document.get("issue_ref"),
        "surface_id": document.get("surface"),
        "shared_candidate": shared,
        "adapter_id": adapter_id,
        "shared_candidate_ref": evaluation.candidate_ref,
        "adapter_role": "field_mapping_only_shared_core_owns_semantics_and_lifecycle",
        "fresh_execution_context_source": "existing_loopx_control_plane",
        "provider_write_performed": False,
        "external_writes_performed": False,
        "raw_content_captured": False,
    }


def revised_payload(revised: candidates.CandidateEvaluation) -> dict[str, Any]:
    return {
        "candidate_ref": revised.candidate_ref,
        "candidate_digest": revised.candidate_digest,
        "candidate": revised.candidate,
        "guard": revised.guard_payload(),
    }


def activation_receipt(review: Review, status: str, record_ref: str | None) -> dict[str, Any]:
    return {
        "schema_version": ACTIVATION_RECEIPT_SCHEMA,
        "review_id": review.review_id,
        "corpus_id": review.corpus.corpus_id,
        "effective_decision": review.effective_decision,
        "candidate_ref": review.candidate.candidate_ref,
        "record_ref": record_ref,
        "status": status,
        "writer": review.corpus.owner,
        "fail_open": True,
        "user_gate": False,
    }


def blocked_activation(review: Review, guard: dict[str, Any]) -> dict[str, Any]:
    """The activation receipt of an accept the guards block now (no plan, no write)."""
    payload = activation_receipt(review, c.GUARD_BLOCKED, None)
    payload["guard"] = guard
    return payload


def planned_activation(review: Review, plan) -> dict[str, Any]:
    """The activation receipt of an accept not executed: the record it would write."""
    payload = activation_receipt(review, "planned", plan.record_ref)
    payload["content_digest"] = plan.content_digest
    return payload


def executed_activation(review: Review, plan, outcome) -> dict[str, Any]:
    """The activation receipt of an executed accept: the provider sync's status (a
    closed record or a guard the activation met reads ``guard_blocked``), the readback
    and the provider target's digest."""
    if outcome.status == c.GUARD_BLOCKED:
        payload = activation_receipt(review, c.GUARD_BLOCKED, plan.record_ref)
        payload["guard"] = {
            "status": c.GUARD_BLOCKED,
            "reasons": [{"code": outcome.guard_reason, "field": "candidate_ref"}],
        }
        return payload
    status = outcome.status if outcome.status != "record_closed" else c.GUARD_BLOCKED
    payload = activation_receipt(review, status, plan.record_ref)
    payload.update(
        {
            "content_digest": plan.content_digest,
            "readback": outcome.readback,
            "memory_available_for_recall": status == c.INGEST_ACTIVATED,
            "provider_target_digest": digest_ref(plan.resource_ref),
        }
    )
    if outcome.status == "record_closed":
        payload["guard"] = {
            "status": c.GUARD_BLOCKED,
            "reasons": [{"code": "record_closed", "field": "candidate_ref"}],
        }
    return payload


def merge_receipt(
    review: Review, record_ref: str, *, evidence=None, evidence_count: int | None = None
) -> dict[str, Any]:
    """The activation receipt of an accepted duplicate: its evidence joins the live record
    it restates (``planned`` until executed, then ``evidence_added``); no provider write."""
    payload = activation_receipt(review, "planned", record_ref)
    payload["merged_into_record"] = True
    if evidence is None:
        return payload
    return {
        **payload,
        "status": "evidence_added",
        "evidence_count": evidence_count,
        "evidence_added_at": clock.iso(evidence.added_at),
        "memory_available_for_recall": True,
    }


def duplicate_payload(duplicate, candidate: dict[str, Any] | None) -> dict[str, Any] | None:
    """``duplicate_of``: the live record of the same corpus the candidate restates, side by
    side with the candidate's text (both the corpus reviewer's to read), or ``None``."""
    if duplicate is None:
        return None
    return duplicate.payload(str((candidate or {}).get("content_summary") or ""))


def duplicate_text(duplicate: dict[str, Any] | None) -> str:
    """``--format text``: the marked duplicate and its record side by side ("" if none)."""
    if not duplicate:
        return ""
    lines = [
        f"duplicate_of: {duplicate['record_ref']} ({duplicate['method']}, cosine "
        f"{duplicate['similarity']:.3f}, threshold {duplicate['threshold']:.2f})",
        f"  record:    {duplicate.get('record_summary', '(not shown)')}",
        f"  candidate: {duplicate.get('candidate_summary', '')}",
    ]
    return "\n" + "\n".join(lines)


def review(result) -> dict[str, Any]:
    """``reward_memory_candidate_review_v0`` of a ``services.review.ReviewDecision``: the
    decision record (``recorded: false`` until the service stores it) in our fields and
    LoopX's (``duplicate_of`` and ``distinct`` are ours: extra keys LoopX hosts ignore)."""
    review_id, evaluation, revised = result.review_id, result.evaluation, result.revised
    decision, effective, reviewer = result.decision, result.effective, result.reviewer
    return {
        "schema_version": c.REVIEW_SCHEMA,
        "review_id": review_id,
        "corpus_id": result.corpus_id,
        "adapter": adapter_payload(result.candidate, result.adapter, evaluation),
        "adapter_id": result.adapter,
        "candidate_ref": evaluation.candidate_ref,
        "candidate_digest": evaluation.candidate_digest,
        "candidate": evaluation.candidate,
        "target_class": (evaluation.candidate or {}).get("target_class"),
        "requested_decision": decision,
        "effective_decision": effective,
        "guard": evaluation.guard_payload(),
        "reviewer": reviewer,
        "revised_candidate": revised_payload(revised) if revised else None,
        "target_record_ref": result.target_record_ref,
        "duplicate_of": duplicate_payload(result.duplicate_of, evaluation.candidate),
        "distinct": result.distinct,
        "next_step": result.next_step,
        "writes_provider": False,
        "recorded": False,
        **loopx_fields(
            decision,
            effective,
            evaluation,
            revised,
            review_ref=review_id,
            reviewer=reviewer,
            preview_review=result.preview_review,
        ),
    }


def decision(result) -> dict[str, Any]:
    """The answer of a ``services.review.ReviewDecision``: a preview's review document,
    or the recorded review's stored document with, when the candidate restates a live
    record, that record's text beside it (shown, never stored with the review)."""
    if result.row is None:
        return review(result)
    shown = duplicate_payload(result.duplicate_of, result.evaluation.candidate)
    stored = result.row.document
    return {**stored, "duplicate_of": shown} if shown else stored


def review_step(step) -> dict[str, Any]:
    """``reward_memory_activation_receipt_v0`` of a ``services.review.ReviewStep``."""
    review_row = step.review
    if step.step == "blocked":
        return blocked_activation(review_row, step.guard)
    if step.step == "activate":
        if not step.executed:
            return planned_activation(review_row, step.plan)
        return executed_activation(review_row, step.plan, step.outcome)
    if step.step == "merge":
        record_ref = step.record.record_ref
        if not step.executed:
            return merge_receipt(review_row, record_ref)
        return merge_receipt(
            review_row, record_ref, evidence=step.evidence, evidence_count=step.evidence_count
        )
    base = activation_receipt(review_row, "planned", review_row.target_record_ref)
    if not step.executed:
        return base
    return {**base, "status": "retired", "lifecycle_state": step.record.lifecycle_state}
