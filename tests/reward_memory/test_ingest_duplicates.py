"""Duplicates arriving by standing-policy ingest (the automatic activation path, no
reviewer): an event whose candidate says what a live record of the corpus already says
is marked ``duplicate_of`` that record and its evidence joins the record's lineage — no
second active record, no provider write — unless it is distinct."""

import pytest

from reward_memory import services
from reward_memory.models import IngestEvent, LocalProviderDocument, MemoryRecord, RecordEvidence
from reward_memory.services import duplicates
from tests.reward_memory import factories as f

ORIGINAL = "Lead PR descriptions with the user-visible effect."
RESTATED = "Lead PR descriptions with the user visible effect!"
UNRELATED = "Run the storage migration tests before touching the schema."


def ingest(event, execute=True):
    return f.ingested(event=event, execute=execute, goal_id="demo", agent_id="author")


def event(event_id: str, summary: str, evidence: str = "feedback:proj-a/pr/18") -> dict:
    return f.scoped_event(event_id, content_summary=summary, source={"evidence_ref": evidence})


@pytest.fixture
def original(db, corpus):
    receipt = ingest(event("ev-1", ORIGINAL))
    assert receipt["status"] == "activated"
    assert receipt["duplicate_of"] is None
    return MemoryRecord.objects.get(record_ref=receipt["record_ref"])


def _active(corpus) -> list[MemoryRecord]:
    return list(MemoryRecord.objects.filter(corpus=corpus, lifecycle_state="active"))


def test_a_restating_event_adds_evidence_instead_of_a_second_active_record(original, corpus):
    documents = LocalProviderDocument.objects.count()
    receipt = ingest(event("ev-2", RESTATED, evidence="feedback:proj-a/pr/31"))
    assert receipt["status"] == "activated"
    assert receipt["record_ref"] == original.record_ref
    assert receipt["deduplicated"] is True
    assert receipt["provider_call_count"] == 0
    assert receipt["memory_available_for_recall"] is True
    duplicate = receipt["duplicate_of"]
    assert duplicate["record_ref"] == original.record_ref
    assert duplicate["method"] == duplicates.IDENTICAL
    assert duplicate["evidence_added"] is True
    assert [r.record_ref for r in _active(corpus)] == [original.record_ref]
    assert LocalProviderDocument.objects.count() == documents, "no provider write"
    row = IngestEvent.objects.get(event_key__isnull=False, candidate_ref=receipt["candidate_ref"])
    assert row.duplicate_of == original.record_ref
    assert row.duplicate_similarity == 1.0
    assert row.record_id == original.pk
    evidence = RecordEvidence.objects.get(record=original)
    assert evidence.event_id == row.pk
    assert evidence.review is None
    assert evidence.evidence_ref == "feedback:proj-a/pr/31"
    assert evidence.candidate_ref == receipt["candidate_ref"]


def test_the_same_duplicate_event_again_replays_without_more_evidence(original, corpus):
    first = ingest(event("ev-2", RESTATED))
    again = ingest(event("ev-2", RESTATED))
    assert again == {**first, "deduplicated": True, "replayed": True}
    assert RecordEvidence.objects.count() == 1
    assert len(_active(corpus)) == 1


def test_a_preview_shows_the_duplicate_and_writes_nothing(original):
    receipt = ingest(event("ev-2", RESTATED), execute=False)
    assert receipt["status"] == "planned"
    assert receipt["record_ref"] == original.record_ref
    assert receipt["duplicate_of"]["evidence_added"] is False
    assert not RecordEvidence.objects.exists()


def test_a_distinct_event_activates_its_own_record(original, corpus):
    receipt = ingest(event("ev-2", UNRELATED))
    assert receipt["status"] == "activated"
    assert receipt["duplicate_of"] is None
    assert receipt["record_ref"] != original.record_ref
    assert len(_active(corpus)) == 2
    assert not RecordEvidence.objects.exists()


def test_a_paraphrase_under_the_threshold_is_distinct_and_over_it_merges(
    original, corpus, settings
):
    paraphrase = "Begin pull request descriptions with the effect users will see."
    settings.REWARD_MEMORY_DUPLICATE_JACCARD = 1.01  # only the embedding rule can fire
    settings.REWARD_MEMORY_DUPLICATE_THRESHOLD = 0.999
    assert ingest(event("ev-2", paraphrase), execute=False)["duplicate_of"] is None
    settings.REWARD_MEMORY_DUPLICATE_THRESHOLD = 0.0
    receipt = ingest(event("ev-3", paraphrase))
    assert receipt["duplicate_of"]["method"] == duplicates.EMBEDDING
    assert len(_active(corpus)) == 1


def test_retiring_the_record_closes_the_lineage_of_its_ingested_duplicate(original, corpus):
    ingest(event("ev-2", RESTATED))
    services.retire_record(
        record_ref=original.record_ref, principal=f.op(f.OWNER), reason_summary="test"
    )
    receipt = ingest(event("ev-3", RESTATED), execute=False)
    assert receipt["status"] == "guard_blocked"
    assert "lineage_closed" in [reason["code"] for reason in receipt["guard"]["reasons"]]
    assert _active(corpus) == []


def test_admin_shows_the_mark_on_the_event_and_the_evidence_on_the_record(original, admin_client):
    from django.urls import reverse

    receipt = ingest(event("ev-2", RESTATED))
    events_page = admin_client.get(reverse("admin:reward_memory_ingestevent_changelist"))
    assert events_page.status_code == 200
    assert "duplicate of" in events_page.content.decode().lower()
    record_page = admin_client.get(
        reverse("admin:reward_memory_memoryrecord_change", args=[original.pk])
    ).content.decode()
    assert "evidence added by duplicates" in record_page.lower()
    assert receipt["candidate_ref"] in record_page
