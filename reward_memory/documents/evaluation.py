"""Stage 4's documents: the evaluation and its release gate (``reward_memory.evaluation``
runs the cases and measures; this renders)."""

from typing import Any

EVALUATION_SCHEMA = "reward_memory_evaluation_v0"
GATE_SCHEMA = "reward_memory_release_gate_v0"


def release_gate(run) -> dict[str, Any]:
    """``reward_memory_release_gate_v0`` of an ``evaluation.Evaluation``: ready for
    bounded dogfood exactly when no reason is left (never a production or semantic-uplift
    claim)."""
    reasons = run.reasons
    passed = not reasons
    return {
        "schema_version": GATE_SCHEMA,
        "status": run.gate_status,
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


def evaluation(run) -> dict[str, Any]:
    """``reward_memory_evaluation_v0`` of an ``evaluation.Evaluation`` in LoopX's layout
    (``ok`` is the verdict)."""
    cases, metrics = run.cases, run.metrics
    verdict = "failed" if run.reasons else "passed"
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
        "release_gate": release_gate(run),
        "boundaries": {
            "provider_writes_performed": metrics["provider_write_count"] > 0,
            "external_writes_performed": metrics["external_write_count"] > 0,
            "raw_memory_captured": False,
            "model_reasoning_replaced": False,
            "new_store_provider_or_scheduler_added": False,
        },
    }
