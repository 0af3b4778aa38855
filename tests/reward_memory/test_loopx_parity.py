"""Issue 23: the recall path's documents match real LoopX 2.1.1 (architecture,
route-check, evaluate) and LoopX's own recall packets are accepted."""

import datetime as dt

import pytest

from loopx_site.core import clock
from reward_memory import contracts, evaluation, routing
from reward_memory.documents import evaluation as evaluation_documents
from reward_memory.documents import route_check as route_documents
from reward_memory.domain import validation as v
from reward_memory.errors import RewardMemoryError
from tests.reward_memory import factories as f
from tests.reward_memory.test_loopx_contract import _loopx_packet


def _route(observation):
    """The route-check document of ``observation``, as the command renders it."""
    return route_documents.route(routing.route(observation))


# -- architecture ---------------------------------------------------------------------------
def test_architecture_carries_loopx_design_sections_and_per_class_fields():
    doc = contracts.architecture()
    for key in (*contracts.LOOPX_ARCHITECTURE_SECTIONS, "raw_memory_captured"):
        assert key in doc, key
    assert doc["raw_memory_captured"] is False
    classes = {c["class_id"]: c for c in doc["memory_classes"]}
    assert list(classes) == list(contracts.MEMORY_CLASSES)
    for class_id, entry in classes.items():
        assert entry["authority"] == contracts.CLASS_AUTHORITY[class_id]
        for field in ("purpose", "source_kinds", "scope_floor", "privacy", "expiry"):
            assert field in entry, (class_id, field)
    assert doc["field_contracts"]["confidence"]["may_increase_authority"] is False
    doc["memory_classes"].clear()  # a caller's copy: the contract itself is unchanged
    assert contracts.architecture()["memory_classes"]


# -- route-check -----------------------------------------------------------------------------
def test_route_check_says_no_raw_issue_or_memory_was_captured():
    for case in routing.CASES.values():
        assert _route(case)["raw_issue_or_memory_captured"] is False


def test_the_pr_3237_case_carries_loopx_case_ref_but_a_callers_url_is_refused():
    doc = _route(routing.CASES["pr-3237"])
    assert doc["case_ref"] == "https://github.com/volcengine/OpenViking/pull/3237"
    assert doc["decision"] == "meta_design_gate"
    with pytest.raises(RewardMemoryError) as exc:
        _route({**routing.CASES["pr-3237"], "case_ref": "https://example.com/pull/2"})
    assert exc.value.field == "case_ref"
    with pytest.raises(RewardMemoryError):
        routing.route({**routing.CASES["pr-3237"], "case_ref": ["not", "a", "ref"]})


# -- evaluate --------------------------------------------------------------------------------
def test_evaluate_reports_loopx_metrics_dimensions_and_boundaries(db):
    doc = evaluation_documents.evaluation(evaluation.evaluate())
    assert (doc["ok"], doc["status"], doc["runner"]) == (
        True,
        "passed",
        "loopx_reward_memory_evaluation",
    )
    assert doc["uses_surrogate_evaluator"] is False
    metrics = doc["metrics"]
    assert metrics["storage_write_bytes"] == 0
    assert metrics["external_write_count"] == 0
    assert "storage_write_count" not in metrics
    assert doc["dimensions"]["performance_and_cost"]["storage_write_bytes"] == 0
    assert doc["dimensions"]["task_outcome"]["assertion_count"] == metrics["assertion_count"]
    assert doc["boundaries"]["external_writes_performed"] is False
    cases = {c["case_id"]: c for c in doc["cases"]}
    assert all(isinstance(c["latency_ms"], int) for c in cases.values())
    assert cases["compact_restart_survival"]["evidence"]["recall_status"] == "completed"
    assert cases["compact_restart_survival"]["evidence"]["readback_verified"] is True
    assert cases["compact_restart_survival"]["evidence"]["serialized_bytes"] > 0
    assert cases["multi_person_authority_conditions"]["evidence"]["matching_actor_guard"] is True
    assert cases["multi_person_authority_conditions"]["evidence"]["mismatched_actor_guard"] is False
    assert cases["gate_non_override"]["evidence"]["application_status"] == "applied"
    assert cases["gate_non_override"]["evidence"]["grants_new_action_authority"] is False
    edge = cases["large_edge_case_patch_protection"]["evidence"]
    assert edge["missing_required_evidence"] == ["effect", "ux", "performance"]
    stale = cases["stale_source_rejection"]["evidence"]
    # LoopX's words in reason_codes; the codes our guards emitted beside them
    assert stale["reason_codes"] == ["source_revision_mismatch", "request_revision_mismatch"]
    assert stale["guard_reason_codes"] == ["freshness_stale", "revision_mismatch"]
    authority = cases["multi_person_authority_conditions"]["evidence"]
    assert "authority_actor_mismatch" in authority["reason_codes"]
    assert "checkpoint_actor_mismatch" in authority["guard_reason_codes"]
    # LoopX's assertion counts: 4 5 3 4 3 4 4 4
    assert [c["assertion_count"] for c in doc["cases"]] == [4, 5, 3, 4, 3, 4, 4, 4]


def test_a_nonzero_storage_write_holds_the_gate(db, monkeypatch):
    monkeypatch.setattr(evaluation, "_storage_bytes_since", lambda before: 12)
    doc = evaluation_documents.evaluation(evaluation.evaluate())
    assert doc["ok"] is False
    assert "nonzero:storage_write_bytes" in doc["release_gate"]["reason_codes"]


# -- LoopX's recall packets ------------------------------------------------------------------
def test_a_loopx_packet_with_loopx_offset_observed_at_completes(activated, frozen_clock):
    packet = _loopx_packet(activated)
    packet["request"]["observed_at"] = frozen_clock.now.isoformat().replace("Z", "+00:00")
    assert packet["request"]["observed_at"].endswith("+00:00")
    doc = f.recalled(request=packet, execute=True, goal_id="demo", agent_id="author")
    assert (doc["schema_version"], doc["status"]) == ("reward_memory_recall_v0", "completed")
    assert doc["result_count"] == 1


def test_a_non_utc_offset_observed_at_is_read_as_the_same_utc_instant(activated, frozen_clock):
    packet = _loopx_packet(activated)
    moment = clock.now().astimezone(dt.timezone(dt.timedelta(hours=1))).replace(microsecond=0)
    packet["request"]["observed_at"] = moment.isoformat()  # …+01:00, RFC 3339
    doc = f.recalled(request=packet, execute=True, goal_id="demo", agent_id="author")
    assert "freshness_stale" not in doc["reason_codes"]
    packet["request"]["observed_at"] = (moment - dt.timedelta(days=30)).isoformat()
    stale = f.recalled(request=packet, execute=True, goal_id="demo", agent_id="author")
    assert "freshness_stale" in stale["reason_codes"]
    assert stale["provider_call_count"] == 0


def test_loopx_repository_project_ref_is_accepted_and_guarded_by_project(activated, double):
    packet = _loopx_packet(activated)
    packet["request"]["project_ref"] = "repository:example"
    packet["read_authority_checkpoint"]["project_ref"] = "repository:example"
    double.reset_calls()
    doc = f.recalled(request=packet, execute=True, goal_id="demo", agent_id="author")
    assert (doc["schema_version"], doc["status"]) == ("reward_memory_recall_v0", "guard_blocked")
    assert "project_mismatch" in doc["reason_codes"]
    assert doc["provider_call_count"] == 0
    assert double.call_count == 0


@pytest.mark.parametrize("good", ["loopx-demo", "repository:example", "org/repo", "a.b_c"])
def test_project_ids_accept_loopx_kind_prefixed_refs(good):
    assert v.project(good, "project") == good


@pytest.mark.parametrize(
    "bad", ["https://example.com/x", "repository:", ":example", "Repo:x", "a b", "file:///etc"]
)
def test_project_ids_refuse_urls_and_malformed_refs(bad):
    with pytest.raises(RewardMemoryError):
        v.project(bad, "project")
