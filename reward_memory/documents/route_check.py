"""``reward_memory_pilot_meta_route_v0`` (``reward_memory.routing`` decides; this
renders)."""

from typing import Any

SCHEMA = "reward_memory_pilot_meta_route_v0"


def route(
    *, case_ref: str, decision: str, reasons: list[str], required: list[str], missing: list[str]
) -> dict[str, Any]:
    return {
        "ok": True,
        "schema_version": SCHEMA,
        "case_ref": case_ref,
        "decision": decision,
        "reason_codes": reasons,
        "required_evidence": required,
        "missing_required_evidence": missing,
        "pilot_authorized": decision == "pilot_fix",
        "meta_review_required": decision == "meta_design_gate",
        "route_check_role": "deterministic_guard_fixture_not_live_reasoner",
        "live_reasoning_required": True,
        "memory_patch_authority": False,
        "external_write_authorized": False,
        "raw_issue_or_memory_captured": False,
    }
