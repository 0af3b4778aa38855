"""Issue 13 route-check: pr-3237 → meta_design_gate, the pilot/meta/hold rules, and the
shipped cases (LoopX: loopx/capabilities/reward_memory/architecture.py)."""

import pytest

from reward_memory import routing
from reward_memory.documents import route_check as route_documents
from reward_memory.errors import RewardMemoryError
from tests.helpers import run_cli


def _route(observation):
    """The route-check document of ``observation``, as the command renders it."""
    return route_documents.route(routing.route(observation))


@pytest.mark.parametrize(
    ("case", "decision"),
    [
        ("pr-3237", "meta_design_gate"),
        ("confirmed-single-surface", "pilot_fix"),
        ("missing-validation", "hold_for_evidence"),
        ("quality-claim-without-benchmark", "hold_for_evidence"),
        ("hot-path-without-performance", "hold_for_evidence"),
        ("uncertain-semantics", "meta_design_gate"),
        ("user-visible-with-ux", "pilot_fix"),
    ],
)
def test_shipped_cases_route_deterministically(case, decision):
    result = run_cli("reward_memory", "route-check", "--case", case, "--format", "json")
    assert result.code == 0, result.stdout
    assert result.json["schema_version"] == "reward_memory_pilot_meta_route_v0"
    assert result.json["decision"] == decision
    assert result.json["memory_patch_authority"] is False


def test_pr_3237_names_every_meta_trigger_and_missing_evidence():
    doc = _route(routing.CASES["pr-3237"])
    assert doc["reason_codes"] == [
        "semantics_by_design",
        "semantic_contract_change",
        "cross_surface_change",
        "generic_boundary_for_specific_policy",
        "high_edge_case_complexity",
        "missing_effect_evidence",
        "missing_ux_evidence",
        "missing_performance_evidence",
    ]
    assert doc["required_evidence"] == ["effect", "ux", "performance"]


@pytest.mark.parametrize(
    ("change", "missing"),
    [
        ({"user_visible_behavior_change": True}, "ux"),
        ({"hot_path_or_storage_change": True}, "performance"),
        ({"retrieval_or_memory_quality_claim": True}, "benchmark"),
        ({"effect_evidence": False}, "effect"),
    ],
)
def test_evidence_is_required_only_when_relevant(change, missing):
    base = routing.CASES["confirmed-single-surface"]
    assert _route(base)["decision"] == "pilot_fix"
    doc = _route({**base, **change})
    assert (doc["decision"], doc["missing_required_evidence"]) == ("hold_for_evidence", [missing])


def test_flags_build_an_observation_from_the_command_line():
    result = run_cli(
        "reward_memory", "route-check", "--named-reproduction", "--named-validation",
        "--effect-evidence", "--surface-count", "3", "--format", "json",
    )  # fmt: skip
    assert (result.json["decision"], result.json["reason_codes"]) == (
        "meta_design_gate",
        ["cross_surface_change"],
    )


def test_a_url_case_ref_is_refused():
    with pytest.raises(RewardMemoryError) as exc:
        _route({**routing.CASES["pr-3237"], "case_ref": "https://example.com/pull/1"})
    assert exc.value.field == "case_ref"
