"""``reward_memory_pilot_meta_route_v0`` (``reward_memory.routing`` decides; this
renders)."""

from typing import Any

SCHEMA = "reward_memory_pilot_meta_route_v0"


def route(routed) -> dict[str, Any]:
    """The document of a ``routing.Routed`` decision."""
    return {
        "ok": True,
        "schema_version": SCHEMA,
        "case_ref": routed.case_ref,
        "decision": routed.decision,
        "reason_codes": routed.reasons,
        "required_evidence": routed.required,
        "missing_required_evidence": routed.missing,
        "pilot_authorized": routed.pilot_authorized,
        "meta_review_required": routed.decision == "meta_design_gate",
        "route_check_role": "deterministic_guard_fixture_not_live_reasoner",
        "live_reasoning_required": True,
        "memory_patch_authority": routed.memory_patch_authority,
        "external_write_authorized": False,
        "raw_issue_or_memory_captured": False,
    }
