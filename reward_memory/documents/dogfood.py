"""Stage 5's documents: the dogfood receipt, the utility observation and the batch
(``reward_memory.dogfood`` validates and decides; these render)."""

from typing import Any

from loopx_site.core.canonical import digest_ref
from reward_memory.contracts import DISPOSITIONS, UTILITY_LABELS

RECEIPT_SCHEMA = "reward_memory_dogfood_receipt_v1"
BATCH_SCHEMA = "reward_memory_dogfood_batch_v1"
UTILITY_SCHEMA = "memory_utility_observation_v0"


def receipt(r) -> dict[str, Any]:
    """``reward_memory_dogfood_receipt_v1`` of a ``dogfood.DogfoodReceipt``, rendered once
    (its utility decided before), once; ``facts`` are the stored application receipt's
    (``selectors.application_receipt_facts``). ``receipt_id`` is a digest of its stable
    fields, so the same settlement of the same outcome has the same id."""
    settled, facts = r.settled, r.facts
    identity = {
        "schema_version": RECEIPT_SCHEMA,
        "application_receipt_id": settled.receipt_id,
        "application_outcome": settled.outcome,
        "outcome_ref": r.module_outcome["outcome_ref"],
        "outcome_status": r.module_outcome["outcome_status"],
    }
    return {
        "ok": True,
        "schema_version": RECEIPT_SCHEMA,
        "domain_family": settled.family,
        "domain_id": settled.domain_id,
        "application_receipt_id": settled.receipt_id,
        "artifact_ref": settled.artifact_ref,
        "corpus_id": facts["corpus_id"],
        "surface_id": facts["surface_id"],
        "recall_id": facts["recall_id"],
        "application_outcome": settled.outcome,
        "application_disposition": settled.disposition,
        "memory_ref_digests": r.memory_ref_digests,
        "module_outcome": r.module_outcome,
        "verification": {
            "result_readback_verified": facts["result_readback_verified"],
            "current_artifact_verified": facts["current_artifact_verified"],
            "source": "stored_application_receipt",
        },
        "cost": r.cost,
        "intervention": r.intervention,
        "grants_new_action_authority": False,
        "raw_content_captured": False,
        "external_writes_performed": False,
        "receipt_id": digest_ref(identity),
        "utility_observation": utility_observation(r.utility) if r.utility else None,
        "utility_evaluation": r.utility_evaluation,
    }


def utility_observation(u) -> dict[str, Any]:
    """``memory_utility_observation_v0`` of a ``dogfood.Utility``."""
    return {
        "schema_version": UTILITY_SCHEMA,
        "observation_id": u.observation_id,
        "label": u.label,
        "evidence": {"basis": u.basis, "strength": u.strength, "evidence_ref": u.evidence_ref},
        "attribution": "set" if len(u.memory_ref_digests) > 1 else "single",
        "memory_ref_digests": u.memory_ref_digests,
        "evaluator_id": u.evaluator,
        "evaluation_version": u.version,
        "grants_new_action_authority": False,
    }


# LoopX's batch boundaries: what a Stage 5 evaluation never does or claims
BOUNDARIES = {
    "semantic_uplift_claim_allowed": False,
    "production_rollout_allowed": False,
    "automatic_recall_enabled": False,
    "new_store_provider_or_scheduler_added": False,
    "operator_write_performed": False,
    "raw_content_captured": False,
}


def _metrics(receipts: list[dict[str, Any]], issue_fix: int, loopx_domains: list[str]):
    """LoopX's batch ``metrics``. Utility evaluations: ``rejected`` counts our
    ``malformed`` proposals, ``not_requested`` our ``missing`` ones; bot feedback is never
    captured here (0)."""
    utilities = [r["utility_observation"] for r in receipts if r["utility_observation"]]
    evaluations = [r["utility_evaluation"]["status"] for r in receipts]
    return {
        "receipt_count": len(receipts),
        "issue_fix_receipt_count": issue_fix,
        "loopx_domain_count": len(loopx_domains),
        **{
            f"{x}_count": sum(r["application_disposition"] == x for r in receipts)
            for x in DISPOSITIONS
        },
        "utility_observation_count": len(utilities),
        **{
            f"utility_{label}_count": sum(u["label"] == label for u in utilities)
            for label in UTILITY_LABELS
        },
        "utility_rejected_count": evaluations.count("malformed"),
        "utility_not_requested_count": evaluations.count("missing"),
        "latency_ms": sum(r["cost"]["latency_ms"] for r in receipts),
        "model_tokens": sum(r["cost"]["model_tokens"] for r in receipts),
        "provider_call_count": sum(r["cost"]["provider_call_count"] for r in receipts),
        "intervention_count": sum(r["intervention"]["count"] for r in receipts),
        "bot_feedback_count": 0,
    }


def batch(decided) -> dict[str, Any]:
    """``reward_memory_dogfood_batch_v1`` of a ``dogfood.Batch`` in LoopX's layout: ``ok`` and
    ``ready_for_bounded_issue_fix_pilot`` exactly when no reason is left, else ``hold``
    (the command exits 2, as LoopX's does). Ours adds ``stage4_release_gate`` (the gate's
    status word), ``operator_control_records`` (the stored controls),
    ``utility_counts_toward_readiness`` and ``external_writes_performed``; ``receipts``
    are our ``reward_memory_dogfood_receipt_v1`` documents."""
    reasons, gate_status, controls = decided.reasons, decided.gate_status, decided.controls
    loopx_domains = decided.loopx_domains
    receipts = [receipt(r) for r in decided.receipts]
    ready = not reasons
    return {
        "ok": ready,
        "schema_version": BATCH_SCHEMA,
        "status": "ready_for_bounded_issue_fix_pilot" if ready else "hold",
        "reason_codes": reasons,
        "stage4_gate_verified": gate_status == "ready_for_bounded_dogfood",
        "loopx_domains": loopx_domains,
        "application_dispositions": sorted({r["application_disposition"] for r in receipts}),
        "operator_controls": sorted({ctl["action"] for ctl in controls}),
        "metrics": _metrics(receipts, decided.issue_fix, loopx_domains),
        "receipts": receipts,
        "boundaries": dict(BOUNDARIES),
        "stage4_release_gate": gate_status,
        "operator_control_records": controls,
        "utility_counts_toward_readiness": False,
        "external_writes_performed": False,
    }
