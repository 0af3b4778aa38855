"""Issue 13 lifecycle gaps: procedural_experience stale/quarantine/refute, weak
hard_policy needs expiry and review, freshness-bound classes declare a maximum age."""

import pytest

from reward_memory import services
from reward_memory.documents import review as review_documents
from reward_memory.errors import RewardMemoryError
from reward_memory.models import LineageClosure, MemoryRecord, RecordTransition
from tests.helpers import run_cli
from tests.reward_memory import factories as f

DIGEST = "sha256:" + "ab" * 32


@pytest.fixture
def experience(db, agents):
    corpus = f.register(
        "exp",
        memory_class="procedural_experience",
        agents=[("demo", "author")],
        max_age_days=30,
        policy_kwargs={"source_kinds": ["maintainer_feedback"]},
    )
    event = f.scoped_event(
        corpus_id="exp",
        target_class="procedural_experience",
        content_summary="Run the storage migration test before touching listings.",
        scope={"repository_revision": "rev-1"},
        freshness={"source_revision": "rev-1", "current_revision": "rev-1"},
        artifact_proof={
            "required": True,
            "verified": True,
            "artifact_ref": "pr:proj-a#3",
            "artifact_digest": DIGEST,
        },
    )
    receipt = f.ingested(event=event, goal_id="demo", agent_id="author", execute=True)
    assert receipt["status"] == "activated", receipt["guard"]
    return corpus, receipt["record_ref"], event


@pytest.mark.parametrize("state", ["stale", "quarantined", "refuted"])
def test_source_truth_marks_procedural_experience_and_it_leaves_recall(experience, state):
    corpus, ref, _ = experience
    record = services.mark_experience(
        record_ref=ref, state=state, principal=f.op(f.OWNER), source_truth_ref="rev:rev-2"
    )
    assert record.lifecycle_state == state
    last = RecordTransition.objects.filter(record=record).order_by("-seq").first()
    assert (last.reason, last.reference) == (f"source_truth_{state}", "rev:rev-2")
    result = f.recalled(
        request=f.recall_request(corpus, queries=["storage migration test listings"]),
        execute=True,
    )
    assert result["items"] == []
    assert LineageClosure.objects.filter(reason="refute").exists() is (state == "refuted")


def test_quarantined_experience_can_be_refuted_but_not_reactivated(experience):
    _, ref, _ = experience
    services.mark_experience(
        record_ref=ref, state="quarantined", principal=f.op(f.OWNER), source_truth_ref="r1"
    )
    refuted = services.mark_experience(
        record_ref=ref, state="refuted", principal=f.op(f.RETIRER), source_truth_ref="r2"
    )
    assert refuted.lifecycle_state == "refuted"
    with pytest.raises(RewardMemoryError) as exc:
        services.mark_experience(
            record_ref=ref, state="stale", principal=f.op(f.OWNER), source_truth_ref="r3"
        )
    assert exc.value.code == "invalid_transition"


def test_only_procedural_experience_is_marked_and_only_by_its_authorities(db, corpus):
    receipt = f.ingested(event=f.scoped_event(), goal_id="demo", agent_id="author", execute=True)
    with pytest.raises(RewardMemoryError) as wrong_class:
        services.mark_experience(
            record_ref=receipt["record_ref"],
            state="stale",
            principal=f.op(f.OWNER),
            source_truth_ref="r",
        )
    assert wrong_class.value.code == "invalid_transition"


def test_mark_experience_command_checks_the_operator(experience):
    _, ref, _ = experience
    argv = ["reward_memory", "mark-experience", "--record-ref", ref, "--state", "stale",
            "--source-truth-ref", "rev:rev-2", "--execute", "--actor"]  # fmt: skip
    denied = run_cli(*argv, f.REVIEWER)
    assert (denied.code, denied.json["code"]) == (2, "not_authorized")
    done = run_cli(*argv, f.OWNER)
    assert (done.code, done.json["record"]["lifecycle_state"]) == (0, "stale"), done.stdout
    assert MemoryRecord.objects.get(record_ref=ref).lifecycle_state == "stale"


def test_low_confidence_hard_policy_needs_expiry_in_review(db):
    weak = f.hard_policy_candidate(confidence={"level": "low"})
    review = review_documents.decision(services.review_candidate(candidate=weak, decision="accept"))
    assert {r["code"] for r in review["guard"]["reasons"]} == {"weak_policy_needs_expiry"}
    bounded = f.merge(weak, {"expires_at": "2026-12-20T00:00:00Z"})
    ok = review_documents.decision(services.review_candidate(candidate=bounded, decision="accept"))
    assert ok["effective_decision"] == "accept"


def test_low_confidence_hard_policy_never_activates_by_standing_policy(db, agents):
    f.register(
        "policy",
        memory_class="hard_policy",
        agents=[("demo", "author")],
        policy_kwargs={
            "roles": ["core_contributor"],
            "action_scopes": ["issue_fix.request_reproduction", "issue_fix.request_changes"],
        },
    )
    doc = f.hard_policy_candidate(confidence={"level": "low"}, expires_at="2026-12-20T00:00:00Z")
    doc.pop("schema_version")
    event = {
        "schema_version": "scoped_feedback_reward_memory_event_v0",
        "event_id": "weak-1",
        "corpus_id": "policy",
        **doc,
    }
    receipt = f.ingested(event=event, goal_id="demo", agent_id="author", execute=True)
    assert {r["code"] for r in receipt["guard"]["reasons"]} == {"weak_policy_needs_review"}
    assert not MemoryRecord.objects.exists()


@pytest.mark.parametrize("memory_class", ["procedural_experience", "working_context"])
def test_freshness_bound_classes_must_declare_a_maximum_source_age(db, memory_class):
    with pytest.raises(RewardMemoryError) as exc:
        services.register_corpus(
            corpus=f.corpus_doc("fresh", memory_class=memory_class), execute=True
        )
    assert exc.value.field == "corpus.freshness.max_source_age_days"
    services.register_corpus(
        corpus=f.corpus_doc("fresh", memory_class=memory_class, max_age_days=7), execute=True
    )
