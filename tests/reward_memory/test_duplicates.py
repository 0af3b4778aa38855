"""Duplicates caught at review: a candidate restating a live record of its corpus is
marked ``duplicate_of`` it; accepting it adds its evidence to that record's lineage
instead of a second active record, unless the reviewer says it is distinct."""

import json

import pytest

from reward_memory import services
from reward_memory.documents import review as review_documents
from reward_memory.models import Candidate, MemoryRecord, RecordEvidence, Review
from reward_memory.services import duplicates
from tests.helpers import run_cli
from tests.reward_memory import factories as f

BASE = "/api/v1/reward-memory"
ORIGINAL = "Lead PR descriptions with the user-visible effect."
RESTATED = "Lead PR descriptions with the user visible effect!"
UNRELATED = "Run the storage migration tests before touching the schema."


def _candidate(summary: str, evidence: str = "feedback:proj-a/pr/18") -> dict:
    return f.candidate(content_summary=summary, source={"evidence_ref": evidence})


def _review(doc, decision="accept", corpus_id="prefs", **kwargs):
    return review_documents.decision(
        services.review_candidate(candidate=doc, decision=decision, corpus_id=corpus_id, **kwargs)
    )


def _activate(corpus_id: str, doc: dict, **kwargs) -> dict:
    review = _review(doc, corpus_id=corpus_id, principal=f.op(f.REVIEWER), execute=True, **kwargs)
    return review_documents.review_step(
        services.apply_review(review_id=review["review_id"], principal=f.op(f.OWNER), execute=True)
    )


@pytest.fixture
def original(db, corpus):
    receipt = _activate("prefs", f.candidate())
    assert receipt["status"] == "activated"
    return MemoryRecord.objects.get(record_ref=receipt["record_ref"])


def test_a_restatement_is_marked_duplicate_of_the_live_record_side_by_side(original):
    review = _review(_candidate(RESTATED))
    duplicate = review["duplicate_of"]
    assert duplicate["record_ref"] == original.record_ref
    assert duplicate["method"] == duplicates.IDENTICAL
    assert duplicate["similarity"] == 1.0
    assert duplicate["record_summary"] == ORIGINAL
    assert duplicate["candidate_summary"] == RESTATED
    assert review["next_step"]["action"] == "add_evidence_to_record"
    assert review["next_step"]["record_ref"] == original.record_ref
    assert review["distinct"] is False


def test_an_unrelated_candidate_is_not_marked(original):
    review = _review(_candidate(UNRELATED))
    assert review["duplicate_of"] is None
    assert review["next_step"]["action"] == "activate_record"


def test_a_paraphrase_above_the_cosine_threshold_is_marked(original, settings):
    paraphrase = "Begin pull request descriptions with the effect users will see."
    settings.REWARD_MEMORY_DUPLICATE_JACCARD = 1.01  # the lexical rule cannot fire
    settings.REWARD_MEMORY_DUPLICATE_THRESHOLD = 0.0
    marked = _review(_candidate(paraphrase))["duplicate_of"]
    assert marked["method"] == duplicates.EMBEDDING
    assert 0.0 < marked["similarity"] < 1.0
    settings.REWARD_MEMORY_DUPLICATE_THRESHOLD = 0.999
    assert _review(_candidate(paraphrase))["duplicate_of"] is None


def test_records_of_another_corpus_or_retired_ones_are_never_compared(original, agents):
    f.register("other", agents=[("demo", "author")])
    assert _review(_candidate(RESTATED), corpus_id="other")["duplicate_of"] is None
    services.retire_record(
        record_ref=original.record_ref, principal=f.op(f.OWNER), reason_summary="test"
    )
    assert _review(_candidate(RESTATED))["duplicate_of"] is None


def test_a_stateless_review_marks_nothing(original):
    review = review_documents.decision(
        services.review_candidate(candidate=_candidate(RESTATED), decision="accept")
    )
    assert review["duplicate_of"] is None


def test_accepting_a_duplicate_adds_its_evidence_instead_of_a_second_record(original):
    review = _review(_candidate(RESTATED), principal=f.op(f.REVIEWER), execute=True)
    stored = Candidate.objects.get(candidate_ref=review["candidate_ref"])
    assert stored.duplicate_of == original.record_ref
    assert stored.duplicate_similarity == 1.0
    # the record's text is shown, not kept in the stored review
    stored_review = Review.objects.get(review_id=review["review_id"])
    assert "record_summary" not in stored_review.document["duplicate_of"]
    plan = review_documents.review_step(
        services.apply_review(review_id=review["review_id"], principal=f.op(f.OWNER))
    )
    assert plan["status"] == "planned"
    assert plan["merged_into_record"] is True
    assert not RecordEvidence.objects.exists()
    receipt = review_documents.review_step(
        services.apply_review(review_id=review["review_id"], principal=f.op(f.OWNER), execute=True)
    )
    assert receipt["status"] == "evidence_added"
    assert receipt["record_ref"] == original.record_ref
    assert receipt["evidence_count"] == 1
    assert MemoryRecord.objects.filter(lifecycle_state="active").count() == 1
    evidence = RecordEvidence.objects.get()
    assert (evidence.record, evidence.candidate_ref) == (original, review["candidate_ref"])
    assert evidence.evidence_ref == "feedback:proj-a/pr/18"
    assert Review.objects.get(review_id=review["review_id"]).applied_record_ref == (
        original.record_ref
    )
    again = review_documents.review_step(
        services.apply_review(review_id=review["review_id"], principal=f.op(f.OWNER), execute=True)
    )
    assert again["evidence_count"] == 1


def test_a_duplicate_the_reviewer_says_is_distinct_activates_its_own_record(original):
    receipt = _activate("prefs", _candidate(RESTATED), distinct=True)
    assert receipt["status"] == "activated"
    assert receipt["record_ref"] != original.record_ref
    assert MemoryRecord.objects.filter(lifecycle_state="active").count() == 2
    assert not RecordEvidence.objects.exists()


def test_a_duplicate_whose_record_retired_before_apply_activates_as_usual(original):
    review = _review(_candidate(RESTATED), principal=f.op(f.REVIEWER), execute=True)
    services.retire_record(
        record_ref=original.record_ref, principal=f.op(f.OWNER), reason_summary="test"
    )
    receipt = review_documents.review_step(
        services.apply_review(review_id=review["review_id"], principal=f.op(f.OWNER), execute=True)
    )
    assert receipt["status"] == "activated"
    assert receipt["record_ref"] != original.record_ref


def test_cli_candidate_review_shows_the_duplicate_and_takes_distinct(original, tmp_path):
    path = tmp_path / "candidate.json"
    path.write_text(json.dumps(_candidate(RESTATED)))
    argv = ["reward_memory", "candidate-review", "--input", str(path), "--corpus-id", "prefs"]
    marked = run_cli(*argv, "--format", "json")
    assert marked.code == 0, marked.stdout
    assert marked.json["duplicate_of"]["record_ref"] == original.record_ref
    assert marked.json["next_step"]["action"] == "add_evidence_to_record"
    distinct = run_cli(*argv, "--distinct", "--format", "json")
    assert distinct.json["distinct"] is True
    assert distinct.json["next_step"]["action"] == "activate_record"
    assert distinct.json["review_id"] != marked.json["review_id"]
    text = run_cli(*argv, "--format", "text").stdout
    assert f"duplicate_of: {original.record_ref} (identical_text, cosine 1.000" in text
    assert f"  record:    {ORIGINAL}" in text
    assert f"  candidate: {RESTATED}" in text


def test_api_candidate_review_shows_the_duplicate_and_takes_distinct(original, host_client):
    author = host_client("demo", "author")
    body = {"candidate": _candidate(RESTATED), "decision": "accept", "corpus_id": "prefs"}
    response = author.post(
        f"{BASE}/candidates/review/", data=json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 200
    assert response.json()["duplicate_of"]["record_ref"] == original.record_ref
    distinct = author.post(
        f"{BASE}/candidates/review/",
        data=json.dumps({**body, "distinct": True}),
        content_type="application/json",
    )
    assert distinct.json()["distinct"] is True
    assert distinct.json()["next_step"]["action"] == "activate_record"


def test_an_edit_replacing_a_record_is_not_its_duplicate(original):
    replacement = _candidate(RESTATED)
    replacement["lineage"] = {"prior_candidate_ref": original.candidate_ref}
    assert _review(replacement)["duplicate_of"] is None


def test_admin_shows_the_mark_on_the_candidate_and_the_evidence_on_the_record(
    original, admin_client
):
    from django.urls import reverse

    review = _review(_candidate(RESTATED), principal=f.op(f.REVIEWER), execute=True)
    review_documents.review_step(
        services.apply_review(review_id=review["review_id"], principal=f.op(f.OWNER), execute=True)
    )
    candidates_page = admin_client.get(reverse("admin:reward_memory_candidate_changelist"))
    assert candidates_page.status_code == 200
    assert "duplicate of" in candidates_page.content.decode().lower()
    stored = Candidate.objects.get(candidate_ref=review["candidate_ref"])
    detail = admin_client.get(
        reverse("admin:reward_memory_candidate_change", args=[stored.pk])
    ).content.decode()
    assert original.record_ref in detail
    record_page = admin_client.get(
        reverse("admin:reward_memory_memoryrecord_change", args=[original.pk])
    ).content.decode()
    assert "evidence added by duplicates" in record_page.lower()
    assert review["candidate_ref"] in record_page


def test_the_demo_shows_one_duplicate_candidate_marked_and_merged(db):
    from loopx_site.core import demo as core_demo
    from reward_memory import demo

    core_demo.load(log=lambda *_: None)
    lines = []
    demo.load(log=lines.append)
    marked = Candidate.objects.exclude(duplicate_of="")
    assert marked.count() == 1
    evidence = RecordEvidence.objects.get(review__isnull=False)
    assert evidence.record.record_ref == marked.get().duplicate_of
    assert evidence.record.lifecycle_state == "active"
    assert "reward_memory duplicate candidate: evidence_added" in lines
    # and a later turn's restatement, ingested by standing policy, joins its record too
    ingested = RecordEvidence.objects.get(event__isnull=False)
    assert ingested.event.duplicate_of == ingested.record.record_ref
    assert "reward_memory ingested duplicate: evidence_added" in lines
    demo.load(log=lines.append)  # idempotent: reviewed and ingested once
    assert RecordEvidence.objects.count() == 2


def test_retiring_the_record_closes_the_lineage_of_its_merged_duplicates(original):
    doc = _candidate(RESTATED)
    review = _review(doc, principal=f.op(f.REVIEWER), execute=True)
    review_documents.review_step(
        services.apply_review(review_id=review["review_id"], principal=f.op(f.OWNER), execute=True)
    )
    services.retire_record(
        record_ref=original.record_ref, principal=f.op(f.OWNER), reason_summary="test"
    )
    again = _review(doc)
    assert again["effective_decision"] == "no_write"
    assert "lineage_closed" in [reason["code"] for reason in again["guard"]["reasons"]]
