"""Candidate review documents: ``reward_memory_candidate_review_v0`` (as LoopX hosts read
it) and ``reward_memory_activation_receipt_v0`` (a recorded review's next step)."""

from typing import Any

from reward_memory import candidates
from reward_memory import contracts as c
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


def loopx_fields(decision, effective, evaluation, revised) -> dict[str, Any]:
    blocked = decision in ("accept", "edit") and effective == "no_write"
    record = None
    if evaluation.candidate is not None:
        source = revised if (effective == "edit" and revised is not None) else evaluation
        record = {
            **(source.candidate or {}),
            "candidate_ref": source.candidate_ref,
            "lifecycle": {"state": "candidate", "supersedes_refs": []},
        }
        if blocked:
            pass
        elif effective == "accept":
            record["lifecycle"]["state"] = "active"
        elif effective == "edit":
            record["lifecycle"]["supersedes_refs"] = [evaluation.candidate_ref]
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
        "record": record,
        "persistence_next_step": (
            PERSISTENCE_NEXT_STEP if effective in ("accept", "retire") else "none"
        ),
        "grants_new_action_authority": False,
        "provider_write_performed": False,
        "external_writes_performed": False,
        "raw_content_captured": False,
    }


def adapter_payload(document, adapter_id, evaluation) -> dict[str, Any] | None:
    """LoopX's adapter object: which pure field mapping produced the shared candidate."""
    if adapter_id is None:
        return None
    return {
        "schema_version": document.get("schema_version"),
        "adapter_id": adapter_id,
        "shared_candidate_ref": evaluation.candidate_ref,
        "adapter_role": "field_mapping_only_shared_core_owns_semantics_and_lifecycle",
        "provider_write_performed": False,
        "external_writes_performed": False,
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


def review(
    *,
    review_id: str,
    corpus_id: str | None,
    candidate: Any,
    adapter: str | None,
    evaluation: candidates.CandidateEvaluation,
    decision: str,
    effective: str,
    reviewer: str | None,
    revised: candidates.CandidateEvaluation | None,
    target_record_ref: str | None,
    next_step: Any,
) -> dict[str, Any]:
    """``reward_memory_candidate_review_v0``: the decision record (``recorded: false``
    until the service stores it) in our fields and LoopX's."""
    return {
        "schema_version": c.REVIEW_SCHEMA,
        "review_id": review_id,
        "corpus_id": corpus_id,
        "adapter": adapter_payload(candidate, adapter, evaluation),
        "adapter_id": adapter,
        "candidate_ref": evaluation.candidate_ref,
        "candidate_digest": evaluation.candidate_digest,
        "candidate": evaluation.candidate,
        "target_class": (evaluation.candidate or {}).get("target_class"),
        "requested_decision": decision,
        "effective_decision": effective,
        "guard": evaluation.guard_payload(),
        "reviewer": reviewer,
        "revised_candidate": revised_payload(revised) if revised else None,
        "target_record_ref": target_record_ref,
        "next_step": next_step,
        "writes_provider": False,
        "recorded": False,
        **loopx_fields(decision, effective, evaluation, revised),
    }
