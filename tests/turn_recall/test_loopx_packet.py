"""LoopX's own quota packet (what real ``loopx quota should-run --turn-instance-id``
prints, trimmed to the fields a turn reads) is accepted and checked: its ``mode``, its
heartbeat receipt's turn, the Goal, the Agent and the project — all before any provider
call. Then: a ``degraded`` turn recalls again once the provider is back."""

import copy
import datetime as dt

import pytest

from loopx_site.core.errors import DomainError
from tests.reward_memory import factories as rmf
from tests.turn_recall.conftest import packet, remember_guidance
from turn_recall import documents, services
from turn_recall.models import TurnRecallReceipt

GUIDANCE = "Re-read the acceptance criteria before resuming a flaky test fix."

#: From a real LoopX 2.1.1 run (the leg's group ``turn-recall.loopx-packet``), Goal renamed.
LOOPX_PACKET = {
    "ok": True,
    "status_health_ok": True,
    "mode": "should-run",
    "goal_id": "demo",
    "decision": "run",
    "should_run": True,
    "heartbeat_receipt": {
        "schema_version": "heartbeat_quota_receipt_v0",
        "turn_instance_id": "turn-44",
        "status": "committed",
        "stall_observation": "not_applicable",
        "event_id": "85910b155b285aa1",
        "recorded_at": "2026-12-01T11:20:13.056607Z",
        "settlement_binding_owed": True,
    },
    "status": "connected_without_run",
    "lifecycle_phase": "connected",
    "effective_action": "normal_run",
    "recommended_action": "[P1] Fix the flaky test.",
    "agent_identity": {
        "schema_version": "peer_agent_identity_v1",
        "agent_model": "peer_v1",
        "agent_id": "author",
        "registered": True,
        "registered_agents": ["author", "reviewer"],
    },
    "selected_todo": {
        "schema_version": "quota_selected_todo_v0",
        "todo_id": "todo_flaky",
        "role": "agent",
        "priority": "P1",
        "status": "open",
        "action_kind": "validate",
        "text": "[P1] Fix the flaky test.",
        "agent_id": "author",
    },
    "state": "eligible",
}


def run(quota, turn="turn-44", execute=True):
    return documents.turn_recall(
        services.agent_turn_recall(
            goal_id="demo",
            agent_id="author",
            turn_instance_id=turn,
            quota_decision=quota,
            execute=execute,
        )
    )


def refused(quota, turn="turn-44") -> DomainError:
    with pytest.raises(DomainError) as exc:
        run(quota, turn)
    return exc.value


def test_loopx_own_quota_packet_is_accepted(db, turn_corpus, double):
    remember_guidance(GUIDANCE)
    result = run(copy.deepcopy(LOOPX_PACKET))
    assert result["status"] == "applied"
    assert result["situation"]["selected_todo"]["title"] == "[P1] Fix the flaky test."
    assert result["situation"]["phase"] == "connected"
    assert result["situation"]["project"] == rmf.PROJECT  # the corpus's, as LoopX
    assert result["context"]["guidance"][0]["content_summary"] == GUIDANCE


def test_a_packet_built_for_turn_44_is_refused_for_turn_99(db, turn_corpus, double):
    remember_guidance(GUIDANCE)
    double.reset_calls()
    err = refused(copy.deepcopy(LOOPX_PACKET), turn="turn-99")
    assert (err.code, err.envelope()["status"]) == ("packet_mismatch", "invalid_request")
    assert (err.envelope()["goal_id"], err.envelope()["agent_id"]) == ("demo", "author")
    assert double.call_count == 0
    assert not TurnRecallReceipt.objects.exists()


@pytest.mark.parametrize(
    ("edit", "code"),
    [
        ({"mode": "status"}, "invalid_packet"),
        ({"heartbeat_receipt": {"turn_instance_id": "turn-44", "status": "pending"}},
         "invalid_packet"),
        ({"heartbeat_receipt": {"status": "committed"}}, "invalid_packet"),
        ({"heartbeat_receipt": "turn-44"}, "invalid_packet"),
        ({"goal_id": "other"}, "packet_mismatch"),
        ({"agent_identity": {"agent_id": "reviewer"}}, "packet_mismatch"),
    ],
)  # fmt: skip
def test_loopx_packet_mode_receipt_goal_and_agent_are_checked(db, turn_corpus, double, edit, code):
    double.reset_calls()
    assert refused(copy.deepcopy(LOOPX_PACKET) | edit).code == code
    assert double.call_count == 0


def test_a_packet_claiming_another_project_is_refused_before_any_provider_call(
    db, todo, turn_corpus, double
):
    remember_guidance(GUIDANCE)
    double.reset_calls()
    for claim in ({"project": "someone-elses"}, {"project_ref": "repository:other"}):
        err = refused(packet() | claim, turn="turn-1")
        assert err.code == "packet_mismatch"
    assert refused(copy.deepcopy(LOOPX_PACKET) | {"project_ref": "other"}).code == (
        "packet_mismatch"
    )
    assert double.call_count == 0  # zero provider calls: never another corpus's guidance
    assert not TurnRecallReceipt.objects.exists()
    same = run(packet() | {"project": rmf.PROJECT}, turn="turn-1")
    assert same["status"] == "applied"


def test_a_degraded_turn_recalls_again_once_the_provider_is_back(
    db, todo, turn_corpus, double, frozen_clock
):
    remember_guidance(GUIDANCE)
    double.available = False
    failed = run(packet(), turn="turn-1")
    assert (failed["status"], failed["reason_code"]) == ("degraded", "provider_unavailable")
    assert failed["same_turn_receipt_written"] is False
    assert not TurnRecallReceipt.objects.exists()
    double.available = True
    frozen_clock.advance(dt.timedelta(seconds=30))  # later: the provider is back
    recovered = run(packet(), turn="turn-1")
    assert recovered["turn_recall_id"] == failed["turn_recall_id"]  # the same turn
    assert recovered["status"] == "applied"
    assert recovered["context"]["guidance"][0]["content_summary"] == GUIDANCE
    assert run(packet(), turn="turn-1")["status"] == "replayed"


def test_quota_should_run_prints_config_runtime_route_where_loopx_does(db, todo, turn_corpus):
    doc = packet()
    memory = doc["goal_boundary"]["capabilities"]["reward_memory"]
    route = memory["config_runtime_route"]
    assert route["schema_version"] == "reward_memory_config_runtime_route_v0"
    assert route["exact_readback_verified"] is True
    assert (memory["enabled"], memory["experiment_available"]) == (True, True)
    assert doc["mode"] == "should-run"


def test_without_an_enabled_experiment_quota_has_no_reward_memory_capability(db, todo):
    assert packet()["goal_boundary"] == {}
