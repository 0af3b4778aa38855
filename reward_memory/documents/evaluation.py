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


def dimensions(metrics: dict[str, Any]) -> dict[str, Any]:
    """The metrics grouped as LoopX groups them."""
    groups = {
        "task_outcome": ("case_count", "passed_case_count", "failed_case_count", "assertion_count"),
        "user_experience": ("maintainer_interruption_count", "user_gate_count"),
        "performance_and_cost": (
            "latency_ms",
            "model_tokens",
            "public_evidence_bytes",
            "storage_write_bytes",
        ),
        "application_quality": ("false_application_count",),
    }
    return {name: {key: metrics[key] for key in keys} for name, keys in groups.items()}


def evaluation(
    *, cases: list[dict[str, Any]], metrics: dict[str, Any], reasons: list[str]
) -> dict[str, Any]:
    """``reward_memory_evaluation_v0`` in LoopX's layout (``ok`` is the verdict)."""
    verdict = "failed" if reasons else "passed"
    return {
        "ok": verdict == "passed",
        "schema_version": EVALUATION_SCHEMA,
        "status": verdict,
        "suite": "stage4_provider_neutral_contract",
        "runner": "loopx_reward_memory_evaluation",
        "executes_real_core": True,
        "uses_surrogate_evaluator": False,
        "cases": cases,
        "metrics": metrics,
        "dimensions": dimensions(metrics),
        "release_gate": release_gate(reasons),
        "boundaries": {
            "provider_writes_performed": metrics["provider_write_count"] > 0,
            "external_writes_performed": metrics["external_write_count"] > 0,
            "raw_memory_captured": False,
            "model_reasoning_replaced": False,
            "new_store_provider_or_scheduler_added": False,
        },
    }
