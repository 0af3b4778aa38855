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
