"""The minimal ingest loop: planned by default, guards before any provider call,
idempotent repeat, fail-open statuses with a sidecar, retry with the same observed_at."""

import datetime as dt

import pytest

from loopx_site.core.errors import DomainError
from reward_memory import services
from reward_memory.documents import ingest as ingest_documents
from reward_memory.errors import RewardMemoryError
from reward_memory.models import IngestEvent, LocalProviderDocument, MemoryRecord, PendingIngest
from tests.reward_memory import factories as f


def ingest(event=None, execute=True, **kwargs):
    kwargs.setdefault("goal_id", "demo")
    kwargs.setdefault("agent_id", "author")
    return f.ingested(event=event or f.scoped_event(), execute=execute, **kwargs)


def recall_items(corpus):
    result = f.recalled(request=f.recall_request(corpus), execute=True)
    return result["items"]


def test_planned_by_default_writes_nothing_and_calls_no_provider(db, double_corpus, double):
    receipt = f.ingested(event=f.scoped_event())
    assert receipt["schema_version"] == "reward_memory_ingest_receipt_v0"
    assert receipt["status"] == "planned"
    assert receipt["executed"] is False
    assert receipt["memory_available_for_recall"] is False
    assert receipt["record_ref"].startswith("rmr_")
    assert receipt["observed_at"] is None
    assert double.call_count == 0
    assert not IngestEvent.objects.exists()
    assert not MemoryRecord.objects.exists()


def test_execute_requires_goal_and_an_enabled_experiment_route(db, double_corpus, double):
    with pytest.raises(RewardMemoryError) as exc:
        f.ingested(event=f.scoped_event(), execute=True)
    assert exc.value.field == "goal_id"
    with pytest.raises(RewardMemoryError) as exc:  # same Goal, not on the experiment allowlist
        ingest(agent_id="reviewer")
    assert (exc.value.code, exc.value.http_status) == ("experiment_route_unavailable", 403)
    assert exc.value.details["experiment_status"] == "agent_not_enabled"
    assert double.call_count == 0
    with pytest.raises(DomainError) as exc:
        ingest(agent_id="ghost")
    assert exc.value.code == "agent_not_registered"
    with pytest.raises(RewardMemoryError) as exc:
        ingest(f.scoped_event(corpus_id="unknown"))
    assert exc.value.code == "corpus_not_found"
    assert double.call_count == 0
    assert not IngestEvent.objects.exists()


def test_activation_with_the_local_provider_and_triple_readback(db, corpus):
    receipt = ingest()
    assert receipt["status"] == "activated"
    assert receipt["memory_available_for_recall"] is True
    assert receipt["readback"] == {
        "resource_ref": True,
        "candidate_ref": True,
        "content_digest": True,
    }
    assert receipt["observed_at"] == "2026-12-01T12:00:00Z"
    assert receipt["adapter"] == "scoped_feedback"
    assert receipt["retry"] is None
    record = MemoryRecord.objects.get(record_ref=receipt["record_ref"])
    assert record.content_digest == receipt["content_digest"]
    assert record.policy_digest == receipt["policy_digest"]
    assert LocalProviderDocument.objects.get().content_digest == receipt["content_digest"]
    assert [i["memory_ref"] for i in recall_items(corpus)] == [record.record_ref]


def test_same_event_twice_gives_one_record_and_the_same_receipt(db, double_corpus, double):
    first = ingest()
    calls = double.call_count
    second = ingest()
    assert first["deduplicated"] is False
    # the same receipt, said to be a replay (and re-read: the record is still active)
    assert second == {**first, "deduplicated": True, "replayed": True}
    assert double.call_count == calls, "a replay makes no provider call"
    assert MemoryRecord.objects.count() == 1
    assert IngestEvent.objects.get().attempts == 2


def test_another_event_for_the_same_candidate_is_deduplicated(db, double_corpus, double):
    first = ingest(f.scoped_event("ev-1"))
    double.reset_calls()
    second = ingest(f.scoped_event("ev-2"))
    assert second["status"] == "activated"
    assert second["deduplicated"] is True
    assert second["record_ref"] == first["record_ref"]
    assert second["event_ref"] != first["event_ref"]
    assert double.call_count == 0
    assert MemoryRecord.objects.count() == 1


def test_provider_down_fails_open_and_claims_nothing(db, double_corpus, double):
    double.available = False
    receipt = ingest()
    assert receipt["status"] == "provider_unavailable"
    assert receipt["memory_available_for_recall"] is False
    assert receipt["fail_open"] is True
    assert receipt["user_gate"] is False
    assert receipt["setup_guidance"]
    assert receipt["retry"] == {"sidecar": True, "when": "next_turn_start"}
    assert MemoryRecord.objects.get().lifecycle_state == "pending_activation"
    assert PendingIngest.objects.get().reason == "provider_unavailable"
    double.available = True
    assert recall_items(double_corpus) == []


def test_ambiguous_commit_is_pending_with_a_sidecar(db, double_corpus, double):
    double.commit_pending = True
    receipt = ingest()
    assert receipt["status"] == "commit_pending"
    assert receipt["memory_available_for_recall"] is False
    assert PendingIngest.objects.get().reason == "commit_pending"


def test_readback_mismatch_is_not_activated_and_recorded_in_the_sidecar(db, double_corpus, double):
    double.tamper_readback = True
    receipt = ingest()
    assert receipt["status"] == "readback_mismatch"
    assert receipt["readback"] == {
        "resource_ref": True,
        "candidate_ref": True,
        "content_digest": False,
    }
    assert receipt["memory_available_for_recall"] is False
    assert MemoryRecord.objects.get().lifecycle_state == "pending_activation"
    sidecar = PendingIngest.objects.get()
    assert (sidecar.reason, sidecar.resolved_at) == ("readback_mismatch", None)


def test_recall_that_misses_the_target_is_a_readback_mismatch(db, double_corpus, double):
    double.omit_from_recall = True
    receipt = ingest()
    assert receipt["status"] == "readback_mismatch"
    assert receipt["readback"]["resource_ref"] is False


def test_retry_after_recovery_activates_with_the_same_observed_at(
    db, double_corpus, double, frozen_clock
):
    double.tamper_readback = True
    first = ingest()
    first_bytes = next(iter(double.documents.values()))["content"]
    frozen_clock.advance(dt.timedelta(hours=3))
    double.tamper_readback = False
    summary = services.reconcile_pending_ingests(goal_id="demo", agent_id="author")
    assert ingest_documents.reconciliation(summary)["schema_version"] == (
        "reward_memory_ingest_reconciliation_v0"
    )
    assert (summary.attempted, summary.activated, summary.still_pending) == (1, 1, 0)
    event = IngestEvent.objects.get()
    assert event.status == "activated"
    assert event.receipt["observed_at"] == first["observed_at"] == "2026-12-01T12:00:00Z"
    assert event.receipt["content_digest"] == first["content_digest"]
    assert next(iter(double.documents.values()))["content"] == first_bytes
    assert len(double.documents) == 1
    assert PendingIngest.objects.get().resolved_at is not None
    record = MemoryRecord.objects.get()
    assert record.lifecycle_state == "active"
    assert record.observed_at == f.NOW
    again = services.reconcile_pending_ingests(goal_id="demo", agent_id="author")
    assert again.attempted == 0


def test_reconcile_keeps_pending_while_the_provider_is_still_down(db, double_corpus, double):
    double.available = False
    ingest()
    summary = services.reconcile_pending_ingests(goal_id="demo", agent_id="author")
    assert (summary.attempted, summary.still_pending) == (1, 1)
    assert PendingIngest.objects.get().attempts == 2


def test_reconcile_is_scoped_to_one_goal_and_agent(db, agents, double):
    f.register("prefs", provider_id="double", agents=[("demo", "author"), ("demo", "reviewer")])
    double.available = False
    ingest(agent_id="reviewer")
    double.available = True
    assert services.reconcile_pending_ingests(goal_id="demo", agent_id="author").attempted == 0
    assert services.reconcile_pending_ingests(goal_id="demo", agent_id="reviewer").activated == 1


def test_reconcile_resolves_events_that_no_longer_pass_the_standing_policy(
    db, double_corpus, double
):
    double.available = False
    ingest()
    services.register_corpus(
        corpus=f.corpus_doc("prefs", provider_id="double", agents=[("demo", "author")]),
        standing_policies=[f.policy_doc("prefs", source_kinds=["user_choice"])],
        execute=True,
    )
    double.available = True
    double.reset_calls()
    summary = services.reconcile_pending_ingests(goal_id="demo", agent_id="author")
    assert (summary.attempted, summary.blocked) == (1, 1)
    assert double.call_count == 0
    assert PendingIngest.objects.get().resolved_at is not None
    assert IngestEvent.objects.get().status == "guard_blocked"


@pytest.mark.parametrize(
    ("overrides", "code"),
    [
        ({"raw_content": "full chat log"}, "raw_content_field"),
        ({"comment_body": "the whole comment"}, "raw_content_field"),
        ({"source": {"evidence_ref": "https://github.example/org/repo/pull/1"}}, "url_not_allowed"),
        ({"content_summary": "Edit /home/alice/repo/file.py first"}, "local_path"),
        ({"scope_ref": "viking://user/u/peers/p/memories"}, "authority_field"),
        ({"provider_binding": {"provider_id": "local"}}, "authority_field"),
        ({"write_authority": True}, "authority_field"),
    ],
)
def test_unsafe_compact_events_are_refused_before_any_provider_call(
    db, double_corpus, double, overrides, code
):
    receipt = ingest(f.scoped_event(**overrides))
    assert receipt["status"] == "guard_blocked"
    assert code in {r["code"] for r in receipt["guard"]["reasons"]}
    assert receipt["memory_available_for_recall"] is False
    assert double.call_count == 0
    assert not IngestEvent.objects.exists()
    assert not MemoryRecord.objects.exists()
    assert "alice" not in str(receipt)


def test_issue_fix_adapter_events_ingest_through_the_same_loop(db, double_corpus, double):
    receipt = ingest(f.issue_fix_event())
    assert receipt["adapter"] == "issue_fix_maintainer_feedback"
    assert receipt["status"] == "activated"
    record = MemoryRecord.objects.get()
    assert record.content["scope"]["subject_ref"] == "issue:proj-a#12"


def test_unsupported_event_schema_is_an_error(db, double_corpus, double):
    with pytest.raises(RewardMemoryError) as exc:
        ingest({"schema_version": "chat_log_v0", "corpus_id": "prefs"})
    assert exc.value.code == "unsupported_schema"
    assert double.call_count == 0


def test_provider_target_binds_policy_and_candidate_digests(db, double_corpus, double):
    first = ingest(f.scoped_event("ev-1"))
    services.register_corpus(
        corpus=f.corpus_doc("prefs", provider_id="double", agents=[("demo", "author")]),
        standing_policies=[f.policy_doc("prefs", roles=["maintainer"])],
        execute=True,
    )
    second = ingest(f.scoped_event("ev-2"))
    assert second["policy_digest"] != first["policy_digest"]
    assert second["provider"]["target_ref_digest"] != first["provider"]["target_ref_digest"]
    assert len(double.documents) == 2


def test_hard_policy_ingest_binds_only_the_verified_checkpoint_scopes(db, agents):
    corpus = f.register(
        "policy",
        memory_class="hard_policy",
        agents=[("demo", "author")],
        policy_kwargs={
            "roles": ["core_contributor"],
            "action_scopes": ["issue_fix.request_reproduction", "issue_fix.request_changes"],
        },
    )
    event = f.hard_policy_candidate()
    event.pop("schema_version")
    event = {
        "schema_version": "scoped_feedback_reward_memory_event_v0",
        "event_id": "hp-1",
        "corpus_id": "policy",
        **event,
    }
    receipt = ingest(event)
    assert receipt["status"] == "activated"
    record = MemoryRecord.objects.get()
    assert record.authority["kind"] == "constraint"
    assert record.authority["action_scopes"] == ["issue_fix.request_reproduction"]
    assert record.authority["checkpoint_ref"] == f.CHECKPOINT_ID
    assert record.authority_checkpoint.checkpoint_id == f.CHECKPOINT_ID
    result = f.recalled(
        request=f.recall_request(corpus, queries=["reproduction test storage contract"]),
        execute=True,
    )
    item = result["items"][0]
    assert item["authority"] == "constraint"
    assert item["action_scopes"] == ["issue_fix.request_reproduction"]
    unverified = f.merge(
        event, {"event_id": "hp-2", "authority_checkpoint": {"checkpoint_ref": "ckpt-never"}}
    )
    blocked = ingest(unverified)
    assert blocked["status"] == "guard_blocked"
    assert {r["code"] for r in blocked["guard"]["reasons"]} == {"checkpoint_unverified"}
