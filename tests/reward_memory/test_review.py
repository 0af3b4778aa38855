"""Review decisions (accept, edit, reject, retire, no_write), the effective-decision
collapse, the hard-policy subset rule, and applying a review with the owner's authority."""

import pytest

from reward_memory import services
from reward_memory.documents import review as review_documents
from reward_memory.errors import RewardMemoryError
from reward_memory.models import Candidate, MemoryRecord, Review
from reward_memory.services import activation
from tests.reward_memory import factories as f


def _review(decision, doc=None, **kwargs):
    return review_documents.decision(
        services.review_candidate(candidate=doc or f.candidate(), decision=decision, **kwargs)
    )


def test_accept_returns_the_activation_next_step_and_writes_nothing(db, corpus):
    review = _review("accept", corpus_id="prefs")
    assert review["schema_version"] == "reward_memory_candidate_review_v0"
    assert review["effective_decision"] == "accept"
    assert review["next_step"]["action"] == "activate_record"
    assert review["next_step"]["actor"] == f.OWNER
    assert review["writes_provider"] is False
    assert review["recorded"] is False
    assert not Review.objects.exists()
    assert not MemoryRecord.objects.exists()


def test_edit_returns_a_revised_candidate_with_prior_lineage(db, corpus):
    review = _review(
        "edit", corpus_id="prefs", edit={"content_summary": "Lead with the effect, briefly."}
    )
    assert review["effective_decision"] == "edit"
    revised = review["revised_candidate"]
    assert revised["candidate"]["lineage"] == {"prior_candidate_ref": review["candidate_ref"]}
    assert revised["candidate"]["content_summary"] == "Lead with the effect, briefly."
    assert revised["candidate_ref"] != review["candidate_ref"]
    assert revised["guard"]["status"] == "passed"
    assert review["next_step"] == {
        "action": "review_revised_candidate",
        "candidate_ref": revised["candidate_ref"],
        "requires": ["review"],
    }


def test_edit_of_unmodelled_field_is_an_error(db, corpus):
    with pytest.raises(RewardMemoryError) as exc:
        _review("edit", corpus_id="prefs", edit={"scope": {"project": "other"}})
    assert exc.value.field == "edit.scope"


def test_edit_that_introduces_a_guard_failure_collapses_to_no_write(db, corpus):
    review = _review("edit", edit={"requested_action_scopes": ["issue_fix.merge"]})
    assert review["effective_decision"] == "no_write"
    assert review["revised_candidate"]["guard"]["status"] == "guard_blocked"


def test_reject_closes_the_candidate_without_next_step(db, corpus):
    review = _review("reject", corpus_id="prefs")
    assert review["effective_decision"] == "reject"
    assert review["next_step"] is None


def test_reject_of_a_blocked_candidate_stays_reject(db):
    review = _review("reject", f.candidate(conflicts=["c:1"]))
    assert review["effective_decision"] == "reject"
    assert review["guard"]["status"] == "guard_blocked"


def test_no_write_is_recorded_as_no_write(db, corpus):
    review = _review("no_write", corpus_id="prefs", principal=f.op(f.REVIEWER), execute=True)
    assert review["effective_decision"] == "no_write"
    assert Review.objects.get().effective_decision == "no_write"


def test_retire_needs_an_active_record_of_this_candidate(db, corpus):
    receipt = _activate_via_review(corpus)
    review = _review(
        "retire", corpus_id="prefs", record_ref=receipt["record_ref"], principal=f.op(f.REVIEWER)
    )
    assert review["effective_decision"] == "retire"
    assert review["target_record_ref"] == receipt["record_ref"]
    assert review["next_step"]["action"] == "retire_record"
    other = f.candidate(content_summary="Something else entirely.")
    with pytest.raises(RewardMemoryError) as exc:
        _review("retire", other, corpus_id="prefs", record_ref=receipt["record_ref"])
    assert exc.value.code == "invalid_argument"


def test_retire_of_a_closed_record_is_an_invalid_transition(db, corpus):
    receipt = _activate_via_review(corpus)
    services.retire_record(record_ref=receipt["record_ref"], principal=f.op(f.RETIRER))
    with pytest.raises(RewardMemoryError) as exc:
        _review("retire", corpus_id="prefs", record_ref=receipt["record_ref"])
    assert exc.value.code == "invalid_transition"


@pytest.mark.parametrize("decision", ["accept", "edit"])
def test_blocked_candidate_collapses_accept_and_edit_to_no_write(db, decision):
    review = _review(
        decision,
        f.candidate(requested_action_scopes=["issue_fix.merge"]),
        edit={"content_summary": "x"},
    )
    assert review["requested_decision"] == decision
    assert review["effective_decision"] == "no_write"
    assert review["next_step"] is None
    assert review["revised_candidate"] is None


# -- hard-policy subset rule --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("verified", "requested", "effective"),
    [
        (True, ["issue_fix.request_reproduction"], "accept"),
        (True, ["issue_fix.request_reproduction", "issue_fix.request_changes"], "accept"),
        (True, ["issue_fix.request_reproduction", "release.publish"], "no_write"),
        (False, ["issue_fix.request_reproduction"], "no_write"),
        (False, ["issue_fix.request_reproduction", "release.publish"], "no_write"),
    ],
)
def test_hard_policy_may_request_only_a_subset_of_a_verified_checkpoint(
    db, verified, requested, effective
):
    ref = f.CHECKPOINT_ID if verified else "ckpt-claimed-but-never-granted"
    doc = f.hard_policy_candidate(
        requested_action_scopes=requested,
        authority_checkpoint={"checkpoint_ref": ref, "verified": True},
    )
    review = _review("accept", doc)
    assert review["effective_decision"] == effective
    codes = {r["code"] for r in review["guard"]["reasons"]}
    assert ("checkpoint_unverified" in codes) is (not verified)
    # release.publish is a forbidden family, refused whatever the checkpoint holds
    assert ("forbidden_action_scope" in codes) is ("release.publish" in requested)


def test_shipped_issue_fix_cases_review_deterministically(db):
    from reward_memory.domain.inputs import read_case

    ok = _review("accept", read_case("issue-fix-verified-contributor"))
    assert ok["adapter_id"] == "issue_fix_maintainer_feedback"
    assert ok["effective_decision"] == "accept"
    blocked = _review("accept", read_case("issue-fix-unverified-contributor"))
    assert blocked["effective_decision"] == "no_write"
    assert {r["code"] for r in blocked["guard"]["reasons"]} == {
        "checkpoint_unverified",
        "forbidden_action_scope",
    }
    assert _review("accept", read_case("issue-fix-verified-contributor")) == ok


# -- recording and applying ---------------------------------------------------------------------
def test_execute_records_candidate_and_review_idempotently(db, corpus):
    first = _review("accept", corpus_id="prefs", principal=f.op(f.REVIEWER), execute=True)
    second = _review("accept", corpus_id="prefs", principal=f.op(f.REVIEWER), execute=True)
    assert first == second
    assert first["recorded"] is True
    assert Review.objects.count() == 1
    assert Candidate.objects.get().guard_status == "passed"


def test_execute_needs_the_corpus_reviewer(db, corpus):
    with pytest.raises(RewardMemoryError) as exc:
        _review("accept", corpus_id="prefs", principal=f.op("user:mallory"), execute=True)
    assert exc.value.code == "reviewer_not_authorized"
    assert exc.value.http_status == 403
    with pytest.raises(RewardMemoryError):
        _review("accept", principal=f.op(f.REVIEWER), execute=True)
    assert not Review.objects.exists()


def test_edit_records_the_revised_candidate_with_lineage(db, corpus):
    review = _review(
        "edit",
        corpus_id="prefs",
        principal=f.op(f.REVIEWER),
        edit={"content_summary": "New."},
        execute=True,
    )
    revised = Candidate.objects.get(candidate_ref=review["revised_candidate"]["candidate_ref"])
    assert revised.prior_candidate_ref == review["candidate_ref"]


def _activate_via_review(corpus, doc=None):
    review = _review(
        "accept", doc, corpus_id=corpus.corpus_id, principal=f.op(f.REVIEWER), execute=True
    )
    return review_documents.review_step(
        services.apply_review(review_id=review["review_id"], principal=f.op(f.OWNER), execute=True)
    )


def test_apply_accept_by_owner_activates_with_exact_readback(db, corpus):
    receipt = _activate_via_review(corpus)
    assert receipt["status"] == "activated"
    assert receipt["readback"] == {
        "resource_ref": True,
        "candidate_ref": True,
        "content_digest": True,
    }
    record = MemoryRecord.objects.get(record_ref=receipt["record_ref"])
    assert record.lifecycle_state == "active"
    assert record.activation_basis == "review"
    assert record.writer == f.OWNER
    review = Review.objects.get(review_id=receipt["review_id"])
    assert review.applied_record_ref == record.record_ref
    again = review_documents.review_step(
        services.apply_review(review_id=receipt["review_id"], principal=f.op(f.OWNER), execute=True)
    )
    assert again["record_ref"] == receipt["record_ref"]
    assert MemoryRecord.objects.count() == 1


def test_apply_preview_plans_without_writing(db, corpus):
    review = _review("accept", corpus_id="prefs", principal=f.op(f.REVIEWER), execute=True)
    plan = review_documents.review_step(
        services.apply_review(review_id=review["review_id"], principal=f.op(f.OWNER))
    )
    assert plan["status"] == "planned"
    assert plan["record_ref"] == activation.record_ref_for(
        "prefs", review["candidate_ref"], review["review_id"]
    )
    assert not MemoryRecord.objects.exists()


def test_only_the_corpus_owner_persists_an_accepted_review(db, corpus):
    review = _review("accept", corpus_id="prefs", principal=f.op(f.REVIEWER), execute=True)
    with pytest.raises(RewardMemoryError) as exc:
        review_documents.review_step(
            services.apply_review(
                review_id=review["review_id"], principal=f.op(f.REVIEWER), execute=True
            )
        )
    assert exc.value.code == "owner_not_authorized"
    assert not MemoryRecord.objects.exists()


def test_non_actionable_reviews_have_no_write_step(db, corpus):
    review = _review("reject", corpus_id="prefs", principal=f.op(f.REVIEWER), execute=True)
    with pytest.raises(RewardMemoryError) as exc:
        review_documents.review_step(
            services.apply_review(
                review_id=review["review_id"], principal=f.op(f.OWNER), execute=True
            )
        )
    assert exc.value.code == "review_not_actionable"


def test_apply_retire_closes_the_record(db, corpus):
    receipt = _activate_via_review(corpus)
    review = _review(
        "retire",
        corpus_id="prefs",
        principal=f.op(f.REVIEWER),
        record_ref=receipt["record_ref"],
        execute=True,
    )
    done = review_documents.review_step(
        services.apply_review(
            review_id=review["review_id"], principal=f.op(f.RETIRER), execute=True
        )
    )
    assert done["status"] == "retired"
    assert MemoryRecord.objects.get(record_ref=receipt["record_ref"]).lifecycle_state == "retired"


def test_activating_an_edit_supersedes_the_prior_candidates_record(db, corpus):
    first = _activate_via_review(corpus)
    edit = _review(
        "edit",
        corpus_id="prefs",
        principal=f.op(f.REVIEWER),
        edit={"content_summary": "Lead with the effect in one line."},
        execute=True,
    )
    second = _activate_via_review(corpus, edit["revised_candidate"]["candidate"])
    old = MemoryRecord.objects.get(record_ref=first["record_ref"])
    new = MemoryRecord.objects.get(record_ref=second["record_ref"])
    assert old.lifecycle_state == "superseded"
    assert old.superseded_by == new
    assert new.lifecycle_state == "active"


def test_apply_retire_is_one_write_a_failed_applied_mark_leaves_the_record_active(
    db, corpus, monkeypatch
):
    from django.db import DatabaseError

    from reward_memory.services import review as review_service

    receipt = _activate_via_review(corpus)
    review = _review(
        "retire",
        corpus_id="prefs",
        principal=f.op(f.REVIEWER),
        record_ref=receipt["record_ref"],
        execute=True,
    )

    def broken(*_args, **_kw):
        raise DatabaseError("the applied mark failed")

    monkeypatch.setattr(review_service, "_mark_applied", broken)
    with pytest.raises(DatabaseError):
        review_documents.review_step(
            services.apply_review(
                review_id=review["review_id"], principal=f.op(f.RETIRER), execute=True
            )
        )
    assert MemoryRecord.objects.get(record_ref=receipt["record_ref"]).lifecycle_state == "active"
    assert Review.objects.get(review_id=review["review_id"]).applied_at is None
    monkeypatch.undo()
    done = review_documents.review_step(
        services.apply_review(
            review_id=review["review_id"], principal=f.op(f.RETIRER), execute=True
        )
    )
    assert done["status"] == "retired"
