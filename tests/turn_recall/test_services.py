"""Agent Turn Recall: identities, default-off, replay, expiry, failures, reconciliation."""

import datetime as dt
import json

import pytest

from loopx_site.core.errors import DomainError
from reward_memory.models import MemoryRecord, PendingIngest
from tests.factories import AgentFactory, GoalFactory
from tests.hooks.factories import TodoFactory
from tests.turn_recall.conftest import packet, remember_guidance
from turn_recall import contracts as c
from turn_recall import documents, services, situation
from turn_recall.models import TurnRecallReceipt

GUIDANCE = "Re-read the acceptance criteria before resuming a flaky test fix."


def recall(turn="turn-1", execute=True, goal_id="demo", agent_id="author", quota=None):
    return documents.turn_recall(
        services.agent_turn_recall(
            goal_id=goal_id,
            agent_id=agent_id,
            turn_instance_id=turn,
            quota_decision=quota if quota is not None else packet(goal_id, agent_id),
            execute=execute,
        )
    )


# -- identities ------------------------------------------------------------------------------
BASE = {
    "goal_id": "g",
    "agent_id": "a",
    "project": "p",
    "lifecycle_phase": "executing",
    "selected_todo": {"todo_id": "t1", "title": "Fix it", "target_key": "seg-1"},
    "recent_outcomes": ["todo_completed:todo:t0"],
    "next_intent": "Complete Todo t1.",
}


def _sit(turn="turn-1", **changes):
    doc = json.loads(json.dumps(BASE))
    for key, value in changes.items():
        if key.startswith("todo_"):
            doc["selected_todo"][key[5:]] = value
        else:
            doc[key] = value
    return situation.build(doc, goal_id="g", agent_id="a", turn_instance_id=turn)


@pytest.mark.parametrize(
    "change",
    [
        {"todo_todo_id": "t2"},
        {"todo_title": "Fix it differently"},
        {"todo_target_key": "seg-2"},
        {"lifecycle_phase": "replanning"},
        {"next_intent": "Replan Todo t1."},
    ],
)
def test_fingerprint_changes_with_todo_target_phase_and_intent(change):
    assert _sit(**change)["situation_fingerprint"] != _sit()["situation_fingerprint"]


@pytest.mark.parametrize(
    "change",
    [
        {"observed_at": "2030-01-01T00:00:00Z"},
        {"quota": {"spent_units": 9}},
        {"interaction_state": {"open_todos": 7}},
        {"turn_start_hooks": {"results": []}},
        {"unknown_host_field": "x"},
    ],
)
def test_fingerprint_ignores_fields_that_are_not_material(change):
    assert _sit(**change)["situation_fingerprint"] == _sit()["situation_fingerprint"]


def test_turn_id_changes_only_the_recall_id_and_the_ids_have_their_formats():
    first, again, other = _sit("turn-1"), _sit("turn-1"), _sit("turn-2")
    assert first["user_prompt_included"] is False
    assert first["schema_version"] == "agent_turn_situation_v0"
    assert first["turn_recall_id"] == again["turn_recall_id"]
    assert first["situation_fingerprint"] == other["situation_fingerprint"]
    assert first["turn_recall_id"] != other["turn_recall_id"]
    assert first["turn_recall_id"].startswith("tr_")
    assert len(first["turn_recall_id"]) == 67
    assert first["situation_fingerprint"].startswith("sha256:")
    assert first["turn_recall_id"] == situation.recall_id(first["situation_fingerprint"], "turn-1")


# -- default-off -----------------------------------------------------------------------------
def test_without_a_turn_admission_binding_the_recall_is_disabled_with_zero_calls(db, todo, double):
    result = recall()
    assert (result["status"], result["provider_call_count"]) == ("disabled", 0)
    assert "context" not in result  # LoopX's disabled document
    assert result["grants_new_action_authority"] is False
    assert double.call_count == 0
    assert not TurnRecallReceipt.objects.exists()


def test_preview_builds_ids_without_provider_access_or_writes(db, todo, turn_corpus, double):
    remember_guidance(GUIDANCE)
    double.reset_calls()
    result = recall(execute=False)
    assert result["status"] == "preview"
    assert result["provider_call_count"] == 0
    assert double.call_count == 0
    assert result["query_evidence"]["exact_query_exposed"] is False
    assert result["query_evidence"]["query_digest"].startswith("sha256:")
    assert not TurnRecallReceipt.objects.exists()


# -- execute, replay, new turns ----------------------------------------------------------------
def test_execute_applies_private_guidance_and_the_same_recall_id_replays_with_zero_calls(
    db, todo, turn_corpus, double
):
    remember_guidance(GUIDANCE)
    double.reset_calls()
    first = recall()
    assert first["status"] == "applied"
    assert first["provider_call_count"] == 1
    item = first["context"]["guidance"][0]
    assert item["content_summary"] == GUIDANCE
    assert item["target_class"] == "soft_preference"
    assert item["candidate_ref"] == MemoryRecord.objects.get().candidate_ref
    assert (first["quota_spend_performed"], first["suppress_external_sinks"]) == (False, True)
    calls = double.call_count
    again = recall()
    assert again["status"] == "replayed"
    assert again["provider_call_count"] == 0
    assert again["context"]["guidance"] == first["context"]["guidance"]
    assert double.call_count == calls
    assert TurnRecallReceipt.objects.count() == 1


def test_a_new_turn_id_recalls_again(db, todo, turn_corpus, double):
    remember_guidance(GUIDANCE)
    double.reset_calls()
    assert recall("turn-1")["provider_call_count"] == 1
    second = recall("turn-2")
    assert second["status"] == "applied"
    assert second["provider_call_count"] == 1
    assert TurnRecallReceipt.objects.count() == 2


def test_the_same_agent_name_in_another_goal_never_reuses_a_receipt(db, todo, turn_corpus, double):
    from tests.reward_memory import factories as rmf

    remember_guidance(GUIDANCE)
    recall()
    other_goal = GoalFactory(goal_id="other")
    AgentFactory(goal=other_goal, agent_id="author")
    TodoFactory(goal=other_goal, todo_id="t1", title="Fix the flaky test", segment_ref="seg-1")
    rmf.register(
        "turns-other", provider_id="double", surfaces=[c.SURFACE], agents=[("other", "author")]
    )
    double.reset_calls()
    result = recall(goal_id="other", agent_id="author")
    assert result["status"] == "empty"  # its own recall: never the demo receipt
    assert result["provider_call_count"] == 1
    assert double.call_count >= 1
    assert TurnRecallReceipt.objects.count() == 2
    again = recall(goal_id="other", agent_id="author")
    assert (again["status"], again["source_status"]) == ("replayed", "empty")


def test_a_stored_receipt_is_keyed_by_goal_and_agent_digests(db, todo, turn_corpus, double):
    """Even with an identical turn_recall_id, another (goal, agent) looks elsewhere."""
    remember_guidance(GUIDANCE)
    first = recall()
    row = TurnRecallReceipt.objects.get()
    assert (row.goal_digest, row.agent_digest) == services.scope_digests("demo", "author")
    assert row.turn_recall_id == first["turn_recall_id"]
    assert not TurnRecallReceipt.objects.filter(
        agent_digest=services.scope_digests("other", "author")[1],
        turn_recall_id=first["turn_recall_id"],
    ).exists()


def test_expired_records_never_appear_even_on_replay(db, todo, turn_corpus, double, frozen_clock):
    remember_guidance(GUIDANCE, "ev-1", expires_at="2026-12-01T13:00:00Z")
    remember_guidance("Keep the turn summary under ten lines.", "ev-2")
    first = recall("turn-1")
    assert len(first["context"]["guidance"]) == 2
    frozen_clock.advance(dt.timedelta(hours=2))
    replay = recall("turn-1")
    assert [g["content_summary"] for g in replay["context"]["guidance"]] == [
        "Keep the turn summary under ten lines."
    ]
    fresh = recall("turn-2")
    assert GUIDANCE not in json.dumps(fresh)


def test_provider_failure_degrades_to_an_empty_context_without_gate_or_spend(
    db, todo, turn_corpus, double
):
    remember_guidance(GUIDANCE)
    double.available = False
    result = recall()
    assert result["ok"] is True
    assert (result["status"], result["reason_code"]) == ("degraded", "provider_unavailable")
    assert result["context"]["guidance"] == []
    assert result["provider_failure_is_user_gate"] is False
    assert result["quota_spend_performed"] is False
    assert result["suppress_external_sinks"] is True


def test_an_application_error_degrades_and_writes_nothing(db, todo, turn_corpus, monkeypatch):
    from turn_recall import adapters

    def broken(**_):
        raise RuntimeError("private detail")

    monkeypatch.setattr(adapters, "recall", broken)
    result = recall()
    assert (result["status"], result["reason_code"]) == ("degraded", "application_error")
    assert "private detail" not in json.dumps(result)
    assert not TurnRecallReceipt.objects.exists()


def test_a_guard_rejection_degrades_before_any_provider_call(db, agent, turn_corpus, double):
    TodoFactory(goal=agent.goal, todo_id="t1", title="Edit /home/alice/repo/file.py first")
    double.reset_calls()
    result = recall()
    assert double.call_count == 0
    assert result["status"] == "degraded"
    assert result["reason_code"] == "guard_rejected"
    assert result["context"]["guidance"] == []


def test_pending_ambiguous_ingest_is_reconciled_before_recall_and_participates(
    db, todo, turn_corpus, double
):
    double.commit_pending = True
    receipt = remember_guidance(GUIDANCE)
    assert receipt["status"] == "commit_pending"
    assert PendingIngest.objects.filter(resolved_at__isnull=True).count() == 1
    double.commit_pending = False
    result = recall()
    assert result["outcome_ingest_reconciliation"]["activated"] == 1
    assert result["status"] == "applied"
    assert [g["content_summary"] for g in result["context"]["guidance"]] == [GUIDANCE]
    assert PendingIngest.objects.get().resolved_at is not None


# -- packet checks --------------------------------------------------------------------------
def test_a_packet_for_another_agent_is_packet_mismatch(db, todo, turn_corpus, double):
    with pytest.raises(DomainError) as exc:
        recall(quota=packet("demo", "reviewer"))
    err = exc.value.envelope()
    assert (err["code"], err["status"]) == ("packet_mismatch", "invalid_request")
    assert err["schema_version"] == "agent_turn_recall_v0"
    assert err["provider_call_count"] == 0
    assert double.call_count == 0


@pytest.mark.parametrize(
    "bad",
    [[], "x", {"goal_id": "demo"}, {"goal_id": "demo", "agent_id": "author", "selected_todo": 3}],
)
def test_malformed_packets_are_invalid_request(db, todo, turn_corpus, bad):
    with pytest.raises(DomainError) as exc:
        recall(quota=bad)
    assert exc.value.envelope()["status"] == "invalid_request"
    assert exc.value.code == "invalid_packet"


def test_an_unknown_goal_is_invalid_request_with_zero_calls(db):
    with pytest.raises(DomainError) as exc:
        services.agent_turn_recall(
            goal_id="ghost",
            agent_id="author",
            turn_instance_id="t",
            quota_decision={"goal_id": "ghost", "agent_id": "author"},
        )
    doc = exc.value.envelope()
    assert (doc["status"], doc["schema_version"], doc["provider_call_count"]) == (
        "invalid_request",
        "agent_turn_recall_v0",
        0,
    )


# -- privacy ---------------------------------------------------------------------------------
def test_receipts_and_packets_hold_no_query_text_or_provider_payload(db, todo, turn_corpus, double):
    remember_guidance(GUIDANCE)
    result = recall()
    query = situation.query(result["situation"])
    row = TurnRecallReceipt.objects.get()
    stored = json.dumps({f.name: str(getattr(row, f.name)) for f in TurnRecallReceipt._meta.fields})
    assert query not in stored
    assert "Fix the flaky test" not in stored  # the Todo title is part of the query
    assert query not in json.dumps(result)
    provider_bytes = next(iter(double.documents.values()))["content"]
    text = provider_bytes.decode() if isinstance(provider_bytes, bytes) else str(provider_bytes)
    assert text not in stored
    assert text not in json.dumps(result)
    assert "double:" not in stored  # provider binding scope stays private
    from reward_memory.models import RecallReceipt

    assert query not in json.dumps(RecallReceipt.objects.get().packet)


def test_a_failing_reconciliation_never_blocks_the_turn(db, todo, turn_corpus, double, monkeypatch):
    from reward_memory import services as rm

    remember_guidance(GUIDANCE)

    def broken(**_):
        raise RuntimeError("provider bug")

    monkeypatch.setattr(rm, "reconcile_pending_ingests", broken)
    result = recall()
    assert result["outcome_ingest_reconciliation"] == {
        "status": "failed",
        "error_code": "application_error",
    }
    assert result["status"] == "applied"
