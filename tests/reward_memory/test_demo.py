"""The demo loader registers visible corpora and records, idempotently."""

from loopx_site.core import demo as core_demo
from reward_memory import demo, selectors
from reward_memory.models import Corpus, IngestEvent, MemoryRecord, Review


def test_demo_is_idempotent_and_shows_active_reviewed_records(db):
    core_demo.load(log=lambda *_: None)
    first = demo.load(log=lambda *_: None)
    counts = (
        Corpus.objects.count(),
        MemoryRecord.objects.count(),
        IngestEvent.objects.count(),
        Review.objects.count(),
    )
    second = demo.load(log=lambda *_: None)
    assert second["corpora"] == first["corpora"]
    assert second["ingest_statuses"] == ["kept", "kept", "kept"]  # rerun says so
    assert second["review_applied"] == "kept"
    assert second["hard_policy"]["status"] == "kept"
    assert set(second["objects"].values()) == {"kept"}
    assert counts == (
        Corpus.objects.count(),
        MemoryRecord.objects.count(),
        IngestEvent.objects.count(),
        Review.objects.count(),
    )
    assert first["ingest_statuses"] == ["activated", "activated", "activated"]
    assert first["review_applied"] == "activated"
    assert set(first["corpora"]) == {
        "loopx-demo-turn-admission",
        "loopx-demo-pr-description",
        "loopx-demo-review-policy",
    }
    assert MemoryRecord.objects.filter(lifecycle_state="active").count() == 5
    assert first["hard_policy"] == {"checkpoint_id": "demo-core-contributor", "status": "activated"}
    policy = MemoryRecord.objects.get(memory_class="hard_policy")
    assert policy.authority_checkpoint.checkpoint_id == "demo-core-contributor"
    assert policy.lifecycle_state == "active"
    docs = selectors.soft_preference_documents("loopx-demo", goal_id="demo", agent_id="author")
    surfaces = {s for d in docs for s in d["surfaces"]}
    assert surfaces == {"agent_workflow.turn_admission", "issue_fix.pr_description"}
    for corpus in Corpus.objects.all():
        assert corpus.policies.filter(active=True).count() == 1


def test_the_demo_leaves_one_host_candidate_awaiting_the_reviewer(db):
    from reward_memory.metrics import review_todo_counts

    core_demo.load(log=lambda *_: None)
    first = demo.load(log=lambda *_: None)
    assert first["objects"]["awaiting candidate loopx-demo-pr-description"] == "created"
    (waiting,) = selectors.candidates_awaiting_reviewer()
    assert waiting.document["content_summary"] == demo.AWAITING_SUMMARY
    assert waiting.corpus.corpus_id == "loopx-demo-pr-description"
    assert review_todo_counts()["candidate"] == 1  # the to-do a newcomer sees is not empty
    again = demo.load(log=lambda *_: None)
    assert again["objects"]["awaiting candidate loopx-demo-pr-description"] == "kept"
    assert [c.pk for c in selectors.candidates_awaiting_reviewer()] == [waiting.pk]


def test_a_rerun_keeps_the_reviewers_decision_on_the_demo_candidate(db):
    from reward_memory import principals, services
    from reward_memory.models import Candidate

    core_demo.load(log=lambda *_: None)
    demo.load(log=lambda *_: None)
    waiting = selectors.candidates_awaiting_reviewer().get()
    services.review_candidate(  # the reviewer rejects it (what the admin action calls)
        candidate=waiting.document,
        decision="reject",
        corpus_id=waiting.corpus.corpus_id,
        principal=principals.operator_account(waiting.corpus.reviewer, field="reviewer"),
        execute=True,
    )
    candidates = Candidate.objects.count()
    rerun = demo.load(log=lambda *_: None)
    assert rerun["objects"]["awaiting candidate loopx-demo-pr-description"] == "kept"
    assert Candidate.objects.count() == candidates  # not recorded again
    assert not selectors.candidates_awaiting_reviewer().exists()  # still rejected
    latest = waiting.reviews.order_by("-created_at", "-pk").first()
    assert latest.effective_decision == "reject"
