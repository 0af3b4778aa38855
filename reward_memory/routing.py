"""``reward_memory route-check``: the deterministic pilot/meta routing fixture.

A guard fixture, not the live reasoner. ``pilot_fix`` only for a confirmed bug on one
surface with no semantic-contract change, no product policy pushed into a generic
boundary, a named reproduction and validation, low/medium edge-case complexity and
every relevance-gated piece of evidence. A meta trigger (by-design/uncertain semantics,
contract change, cross-surface, generic-boundary leakage, high complexity) gives
``meta_design_gate``; otherwise missing evidence gives ``hold_for_evidence``.
Evidence by relevance: effect always; UX for user-visible change; performance for a
hot path or storage change; benchmark only for retrieval/memory-quality claims.
"""

from dataclasses import dataclass
from typing import Any, ClassVar

from reward_memory.domain import guards
from reward_memory.domain import validation as v
from reward_memory.errors import invalid

BEHAVIOR_STATUSES = ("bug_confirmed", "by_design", "uncertain")
COMPLEXITIES = ("low", "medium", "high")
FLAGS = (
    "semantic_contract_change",
    "generic_boundary_for_specific_policy",
    "user_visible_behavior_change",
    "hot_path_or_storage_change",
    "retrieval_or_memory_quality_claim",
    "named_reproduction",
    "named_validation",
    "effect_evidence",
    "ux_evidence",
    "benchmark_evidence",
    "performance_evidence",
)


@dataclass(frozen=True)
class Routed:
    """What ``route`` decided for one observation (``documents.route_check`` renders it):
    the reason codes, the evidence its relevance requires and what of it is missing."""

    case_ref: str
    decision: str
    reasons: list[str]
    required: list[str]
    missing: list[str]
    #: a route check never authorises a memory patch (a deterministic guard fixture, not
    #: a live reasoner)
    memory_patch_authority: ClassVar[bool] = False

    @property
    def pilot_authorized(self) -> bool:
        """Only a ``pilot_fix`` decision authorises a pilot."""
        return self.decision == "pilot_fix"


def _case(case_ref: str, **values: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "case_ref": case_ref,
        "behavior_status": "bug_confirmed",
        "surface_count": 1,
        "edge_case_complexity": "low",
        **dict.fromkeys(FLAGS, False),
        "named_reproduction": True,
        "named_validation": True,
        "effect_evidence": True,
    }
    base.update(values)
    return base


# Shipped observations (public, compact; the PR #3237 case carries LoopX's public PR URL
# as its case_ref, the one URL route-check prints — a caller's case_ref stays a compact
# reference).
CASES: dict[str, dict[str, Any]] = {
    # the OpenViking PR #3237 outcome: by-design semantics, two surfaces, a contract
    # change and a generic boundary for a specific policy, high complexity
    "pr-3237": _case(
        "https://github.com/volcengine/OpenViking/pull/3237",  # LoopX's case_ref
        behavior_status="by_design",
        surface_count=2,
        semantic_contract_change=True,
        generic_boundary_for_specific_policy=True,
        user_visible_behavior_change=True,
        hot_path_or_storage_change=True,
        edge_case_complexity="high",
        effect_evidence=False,
    ),
    "confirmed-single-surface": _case("fixture-confirmed-single-surface"),
    "missing-validation": _case("fixture-missing-validation", named_validation=False),
    "quality-claim-without-benchmark": _case(
        "fixture-quality-claim-without-benchmark", retrieval_or_memory_quality_claim=True
    ),
    "hot-path-without-performance": _case(
        "fixture-hot-path-without-performance", hot_path_or_storage_change=True
    ),
    "uncertain-semantics": _case("fixture-uncertain-semantics", behavior_status="uncertain"),
    "user-visible-with-ux": _case(
        "fixture-user-visible-with-ux", user_visible_behavior_change=True, ux_evidence=True
    ),
}


SHIPPED_CASE_REFS = frozenset(case["case_ref"] for case in CASES.values())


def route(observation: dict[str, Any]) -> Routed:
    """The decision for one observation (``documents.route_check.route`` renders it as
    ``reward_memory_pilot_meta_route_v0``)."""
    status = v.choice(observation.get("behavior_status"), "behavior_status", BEHAVIOR_STATUSES)
    complexity = v.choice(
        observation.get("edge_case_complexity"), "edge_case_complexity", COMPLEXITIES
    )
    surfaces = v.integer(observation.get("surface_count"), "surface_count", minimum=1, maximum=20)
    flags = {key: v.boolean(observation.get(key), key) for key in FLAGS}
    raw_ref = observation.get("case_ref") or "manual_observation"
    shipped = isinstance(raw_ref, str) and raw_ref in SHIPPED_CASE_REFS
    case_ref = raw_ref if shipped else v.ref(raw_ref, "case_ref")
    if not shipped and guards.string_reasons(case_ref, "case_ref"):
        raise invalid("case_ref", "case_ref must be a compact public-safe reference")

    meta = []
    if status != "bug_confirmed":
        meta.append(f"semantics_{status}")
    if flags["semantic_contract_change"]:
        meta.append("semantic_contract_change")
    if surfaces > 1:
        meta.append("cross_surface_change")
    if flags["generic_boundary_for_specific_policy"]:
        meta.append("generic_boundary_for_specific_policy")
    if complexity == "high":
        meta.append("high_edge_case_complexity")
    required = {
        "effect": True,
        "ux": flags["user_visible_behavior_change"],
        "benchmark": flags["retrieval_or_memory_quality_claim"],
        "performance": flags["hot_path_or_storage_change"],
    }
    missing = [
        name for name, needed in required.items() if needed and not flags[f"{name}_evidence"]
    ]
    missing_pilot = list(missing)
    for key in ("named_reproduction", "named_validation"):
        if not flags[key]:
            missing_pilot.append(key)
    if meta:
        decision, reasons = "meta_design_gate", meta + [f"missing_{m}_evidence" for m in missing]
    elif missing_pilot:
        decision = "hold_for_evidence"
        reasons = [
            f"missing_{m}_evidence" if m in required else f"missing_{m}" for m in missing_pilot
        ]
    else:
        decision = "pilot_fix"
        reasons = [
            "confirmed_bug_semantics",
            "single_bounded_surface",
            "no_semantic_contract_change",
            "no_generic_boundary_for_specific_policy",
            f"edge_case_complexity_{complexity}",
            "reproduction_validation_and_relevant_evidence_present",
        ]
    relevant = [name for name, needed in required.items() if needed]
    return Routed(case_ref, decision, reasons, relevant, missing)
