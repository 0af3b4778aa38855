"""LoopX's Agent Turn Recall contract, case by case.

Each case restates one test of LoopX's ``tests/capabilities/test_agent_turn_recall.py``
(public repository ``loopx-project/loopx``) against our service. Where our wire differs
by design it is said in the case (``replayed`` is our name for LoopX's
``deduplicated``; the Goal/Agent scope of a receipt is a pair of digests in a table
instead of a file path).
"""

import datetime as dt
import json

import pytest

from loopx_site.core.errors import DomainError
from tests.factories import AgentFactory, GoalFactory
from tests.turn_recall.conftest import packet, remember_guidance
from turn_recall import documents, services, situation

SUMMARY = (
    "After merging an origin-task change, report the refinements and ask that task to "
    "update its integration branch from main."
)


def quota_decision(phase="reviewing", target_key="pr:123") -> dict:
    """LoopX's fixture packet, with our identity fields."""
    return {
        "goal_id": "demo",
        "agent_identity": {"agent_id": "author"},
        "status_health_ok": True,
        "decision": "run",
        "lifecycle_phase": phase,
        "recommended_action": "Review, refine, validate, and close the selected work.",
        "selected_todo": {
            "todo_id": "todo_123",
            "text": "Review and refine the selected pull request.",
            "action_kind": "review_refine_merge",
            "target_key": target_key,
        },
    }


def run(turn="2026-08-02T10:00:00+00:00", execute=True, **kw):
    return documents.turn_recall(
        services.agent_turn_recall(
            goal_id="demo",
            agent_id="author",
            turn_instance_id=turn,
            quota_decision=kw.get("quota", quota_decision()),
            execute=execute,
        )
    )


def test_situation_is_prompt_independent_and_fingerprints_material_changes(db, agent):
    """LoopX: test_situation_is_prompt_independent_and_fingerprints_material_changes."""

    def sit(turn="2026-08-02T10:00:00+00:00", **kw):
        return situation.build(
            quota_decision(**kw), goal_id="demo", agent_id="author", turn_instance_id=turn
        )

    first, retry = sit(), sit()
    next_turn = sit(turn="2026-08-02T10:03:00+00:00")
    assert first["user_prompt_included"] is False
    assert first["situation_fingerprint"] == retry["situation_fingerprint"]
    assert first["turn_recall_id"] == retry["turn_recall_id"]
    assert first["situation_fingerprint"] == next_turn["situation_fingerprint"]
    assert first["turn_recall_id"] != next_turn["turn_recall_id"]
    assert first["situation_fingerprint"] != sit(phase="merged")["situation_fingerprint"]
    assert first["situation_fingerprint"] != sit(target_key="pr:124")["situation_fingerprint"]


def test_preview_never_exposes_the_query_or_calls_the_provider(db, turn_corpus, double):
    """LoopX: the preview half of test_situation_is_prompt_independent_…"""
    preview = run(execute=False)
    assert preview["query_evidence"]["exact_query_exposed"] is False
    assert preview["provider_call_count"] == 0
    assert double.call_count == 0


def test_recall_injects_private_guidance_without_granting_authority(db, turn_corpus, double):
    """LoopX: test_recall_injects_private_guidance_without_granting_authority."""
    remember_guidance(SUMMARY)
    result = run()
    assert result["status"] == "applied"
    assert result["provider_call_count"] == 1
    assert len(result["context"]["guidance"]) == 1
    assert "integration branch" in result["context"]["guidance"][0]["content_summary"]
    assert result["grants_new_action_authority"] is False
    assert result["quota_spend_performed"] is False
    assert result["suppress_external_sinks"] is True


def test_wrong_scope_blocks_before_provider_call(db, turn_corpus, double):
    """LoopX: test_wrong_peer_blocks_before_provider_call — an Agent the corpus does
    not bind gets no recall and no provider call (ours: ``disabled``)."""
    result = documents.turn_recall(
        services.agent_turn_recall(
            goal_id="demo",
            agent_id="reviewer",
            turn_instance_id="t",
            quota_decision=quota_decision() | {"agent_identity": {"agent_id": "reviewer"}},
            execute=True,
        )
    )
    assert result["status"] == "disabled"
    assert result["provider_call_count"] == 0
    assert double.call_count == 0


def test_expired_memory_is_not_injected(db, turn_corpus, double, frozen_clock):
    """LoopX: test_expired_memory_is_not_injected."""
    remember_guidance(SUMMARY, expires_at="2026-12-01T12:30:00Z")
    frozen_clock.advance(dt.timedelta(hours=1))
    double.reset_calls()
    result = run()
    assert result["context"]["guidance"] == []
    assert result["provider_call_count"] == 1


def test_provider_failure_fails_open_without_user_gate(db, turn_corpus, double):
    """LoopX: test_provider_failure_fails_open_without_user_gate (ours: ``degraded``)."""
    double.available = False
    result = run()
    assert result["ok"] is True
    assert result["status"] == "degraded"
    assert result["context"]["guidance"] == []
    assert result["provider_failure_is_user_gate"] is False
    assert result["grants_new_action_authority"] is False


def test_quota_identity_requires_exact_goal_and_agent(db, turn_corpus):
    """LoopX: test_quota_identity_requires_exact_agent_and_turn_receipt."""
    with pytest.raises(DomainError) as exc:
        services.agent_turn_recall(
            goal_id="demo",
            agent_id="author",
            turn_instance_id="t",
            quota_decision=quota_decision() | {"agent_identity": {"agent_id": "reviewer"}},
        )
    assert exc.value.code == "packet_mismatch"


def test_configured_turn_recall_injects_content_and_deduplicates(db, turn_corpus, double):
    """LoopX: test_configured_turn_recall_injects_content_and_deduplicates."""
    remember_guidance(SUMMARY)
    double.reset_calls()
    first, second = run("turn-1"), run("turn-1")
    assert first["status"] == "applied"
    assert first["context"]["guidance"][0]["content_summary"]
    assert first["provider_call_count"] == 1
    assert second["status"] == "replayed"
    assert second["context"]["guidance"] == first["context"]["guidance"]
    assert second["provider_call_count"] == 0
    assert second["same_turn_receipt_reused"] is True
    assert double.calls.count("recall") == 1


def test_recall_receipt_identity_includes_goal_and_agent(db):
    """LoopX: test_recall_receipt_identity_includes_goal_and_agent."""
    first = services.scope_digests("goal-one", "researcher")
    second = services.scope_digests("goal-two", "researcher")
    sibling = services.scope_digests("goal-one", "reviewer")
    assert first != second
    assert first[1] != sibling[1]
    assert first[0] == sibling[0]
    assert services.scope_digests("goal+one", "r") != services.scope_digests("goal one", "r")


def test_runtime_failure_preserves_turn_and_recovers(db, turn_corpus, double, monkeypatch):
    """LoopX: test_checkpoint_transport_failure_preserves_turn_and_recovers — a failure
    before the provider writes no receipt; the same turn recalls once it is gone."""
    from turn_recall import adapters

    original = adapters.recall
    monkeypatch.setattr(
        adapters, "recall", lambda **_: (_ for _ in ()).throw(RuntimeError("private runtime"))
    )
    failed = run("turn-recovery")
    assert failed["status"] == "degraded"
    assert failed["provider_call_count"] == 0
    assert "private runtime" not in json.dumps(failed)
    monkeypatch.setattr(adapters, "recall", original)
    recovered = run("turn-recovery")
    assert recovered["status"] == "empty"
    assert recovered["provider_call_count"] == 1
    assert recovered["same_turn_receipt_written"] is True


def test_same_agent_name_in_another_goal_is_another_identity(db, turn_corpus):
    """LoopX: test_recall_receipt_identity_includes_goal_and_agent (registry half)."""
    other = GoalFactory(goal_id="other")
    AgentFactory(goal=other, agent_id="author")
    doc = packet("other", "author")
    result = documents.turn_recall(
        services.agent_turn_recall(
            goal_id="other", agent_id="author", turn_instance_id="t", quota_decision=doc
        )
    )
    assert result["status"] == "disabled"
