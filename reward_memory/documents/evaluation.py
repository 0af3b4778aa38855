"""Stage 4's documents: the evaluation and its release gate (``reward_memory.evaluation``
runs the cases and measures; this renders)."""

from typing import Any

EVALUATION_SCHEMA = "reward_memory_evaluation_v0"
GATE_SCHEMA = "reward_memory_release_gate_v0"


def release_gate(reasons: list[str]) -> dict[str, Any]:
    """``reward_memory_release_gate_v0``: ready for bounded dogfood exactly when no
    reason is left (never a production or semantic-uplift claim)."""
    passed = not reasons
    return {
        "schema_version": GATE_SCHEMA,
        "status": "ready_for_bounded_dogfood" if passed else "hold",
        "decision": "advance_stage_5" if passed else "repair_stage_4",
        "reason_codes": reasons,
        "claim_scope": "core_contract_invariants_only",
        "semantic_uplift_claim_allowed": False,
        "production_rollout_allowed": False,
    }


def evaluation(
    *, cases: list[dict[str, Any]], metrics: dict[str, Any], reasons: list[str]
) -> dict[str, Any]:
    """``reward_memory_evaluation_v0``."""
    return {
        "ok": True,
        "schema_version": EVALUATION_SCHEMA,
        "status": "failed" if reasons else "passed",
        "suite": "stage4_provider_neutral_contract",
        "executes_real_core": True,
        "cases": cases,
        "metrics": metrics,
        "release_gate": release_gate(reasons),
        "external_writes_performed": False,
        "user_gate": False,
    }
