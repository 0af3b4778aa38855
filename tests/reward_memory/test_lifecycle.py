"""Record lifecycle: every allowed transition, refused transitions, the immutable
transition history, and one test per named database constraint."""

import datetime as dt

import pytest
from django.db import IntegrityError, transaction

from reward_memory import services
from reward_memory.documents import registry
from reward_memory.documents import review as review_documents
from reward_memory.errors import RewardMemoryError
from reward_memory.models import (
    ApplicationReceipt,
    Candidate,
    Corpus,
    IngestEvent,
    LocalProviderDocument,
    MemoryRecord,
    RecallReceipt,
    RecordTransition,
    Review,
    StandingPolicy,
)
from reward_memory.services import activation, records
from tests.reward_memory import factories as f


def _ingest(event_id="ev-1", **overrides):
    return f.ingested(
        event=f.scoped_event(event_id, **overrides),
        goal_id="demo",
        agent_id="author",
        execute=True,
    )


def _states(record_ref):
    return [
        (t.from_state, t.to_state)
        for t in RecordTransition.objects.filter(record__record_ref=record_ref).order_by("seq")
    ]


def test_pending_to_active_only_after_readback(db, corpus):
    receipt = _ingest()
    assert _states(receipt["record_ref"]) == [
        ("", "pending_activation"),
        ("pending_activation", "active"),
    ]
    record = MemoryRecord.objects.get(record_ref=receipt["record_ref"])
    assert record.readback_verified_at is not None
    assert record.activated_at == f.NOW


def test_pending_record_can_be_retired(db, double_corpus, double):
    double.available = False
    receipt = _ingest()
    assert MemoryRecord.objects.get().lifecycle_state == "pending_activation"
    services.retire_record(record_ref=receipt["record_ref"], principal=f.op(f.RETIRER))
    assert _states(receipt["record_ref"])[-1] == ("pending_activation", "retired")


def test_active_to_retired(db, corpus):
    receipt = _ingest()
    record = services.retire_record(
        record_ref=receipt["record_ref"], principal=f.op(f.RETIRER), reason_summary="source changed"
    )
    assert record.lifecycle_state == "retired"
    assert record.retirement["actor"] == f.RETIRER
    assert _states(receipt["record_ref"])[-1] == ("active", "retired")


def test_active_to_revoked_records_the_revocation(db, corpus):
    receipt = _ingest()
    record = services.revoke_record(
        record_ref=receipt["record_ref"], principal=f.op(f.OWNER), revocation_ref="revocation:1"
    )
    assert record.lifecycle_state == "revoked"
    assert record.revocation["revocation_ref"] == "revocation:1"
    last = RecordTransition.objects.filter(record=record).order_by("-seq").first()
    assert (last.to_state, last.reference, last.actor) == ("revoked", "revocation:1", f.OWNER)


def test_active_to_superseded_names_the_successor(db, corpus):
    old = _ingest("ev-1")
    new = _ingest("ev-2", content_summary="Lead with the effect, then validation.")
    record = services.supersede_record(
        record_ref=old["record_ref"], by_record_ref=new["record_ref"], principal=f.op(f.OWNER)
    )
    assert record.lifecycle_state == "superseded"
    assert record.superseded_by.record_ref == new["record_ref"]


def test_active_to_expired_by_the_sweep(db, corpus, frozen_clock):
    receipt = _ingest(expires_at="2026-12-02T00:00:00Z")
    assert services.expire_due_records(execute=True).expired == ()
    frozen_clock.advance(dt.timedelta(days=2))
    preview = services.expire_due_records()
    assert (len(preview.due), preview.expired) == (1, ())
    assert len(services.expire_due_records(execute=True).expired) == 1
    assert _states(receipt["record_ref"])[-1] == ("active", "expired")


@pytest.mark.parametrize("closing", ["retire", "revoke"])
def test_closed_records_cannot_transition_again(db, corpus, closing):
    receipt = _ingest()
    if closing == "retire":
        services.retire_record(record_ref=receipt["record_ref"], principal=f.op(f.RETIRER))
    else:
        services.revoke_record(
            record_ref=receipt["record_ref"], principal=f.op(f.OWNER), revocation_ref="r"
        )
    for call in (
        lambda: services.retire_record(record_ref=receipt["record_ref"], principal=f.op(f.RETIRER)),
        lambda: services.revoke_record(
            record_ref=receipt["record_ref"], principal=f.op(f.OWNER), revocation_ref="r"
        ),
    ):
        with pytest.raises(RewardMemoryError) as exc:
            call()
        assert exc.value.code == "invalid_transition"
        assert exc.value.http_status == 409


def test_transition_authority_is_checked(db, corpus):
    receipt = _ingest()
    with pytest.raises(RewardMemoryError) as exc:
        services.retire_record(record_ref=receipt["record_ref"], principal=f.op("user:mallory"))
    assert exc.value.code == "permission_required"  # no such operator account
    with pytest.raises(RewardMemoryError) as exc:
        services.revoke_record(
            record_ref=receipt["record_ref"], principal=f.op(f.REVIEWER), revocation_ref="r"
        )
    assert exc.value.code == "not_authorized"
    assert "user:owner" in exc.value.message  # names who holds the authority
    with pytest.raises(RewardMemoryError):
        services.supersede_record(
            record_ref=receipt["record_ref"],
            by_record_ref=receipt["record_ref"],
            principal=f.op(f.REVIEWER),
        )
    assert MemoryRecord.objects.get().lifecycle_state == "active"


def test_supersede_needs_an_active_successor_of_the_same_surface(db, corpus):
    receipt = _ingest()
    with pytest.raises(RewardMemoryError) as exc:
        services.supersede_record(
            record_ref=receipt["record_ref"],
            by_record_ref=receipt["record_ref"],
            principal=f.op(f.OWNER),
        )
    assert exc.value.code == "invalid_transition"


def test_unknown_record_is_not_found(db, corpus):
    with pytest.raises(RewardMemoryError) as exc:
        services.retire_record(record_ref="rmr_" + "0" * 64, principal=f.op(f.RETIRER))
    assert exc.value.http_status == 404


def test_transition_history_is_immutable(db, corpus):
    _ingest()
    row = RecordTransition.objects.first()
    row.reason = "rewritten"
    with pytest.raises(ValueError, match="immutable"):
        row.save()
    with pytest.raises(ValueError, match="immutable"):
        row.delete()


def test_activating_a_new_policy_basis_supersedes_the_same_candidates_record(db, corpus):
    first = _ingest("ev-1")
    services.register_corpus(
        corpus=f.corpus_doc("prefs", agents=[("demo", "author")]),
        standing_policies=[
            f.policy_doc("prefs", source_kinds=["maintainer_feedback", "user_choice"])
        ],
        execute=True,
    )
    second = _ingest("ev-2")
    assert second["status"] == "activated"
    assert second["record_ref"] != first["record_ref"]
    assert second["candidate_ref"] == first["candidate_ref"]
    old = MemoryRecord.objects.get(record_ref=first["record_ref"])
    assert old.lifecycle_state == "superseded"
    assert MemoryRecord.objects.filter(lifecycle_state="active").count() == 1


# -- constraints ----------------------------------------------------------------------------------
def _clone(instance, **changes):
    fields = {
        field.attname: getattr(instance, field.attname)
        for field in instance._meta.concrete_fields
        if not field.primary_key
    }
    fields.update(changes)
    return fields


def _raises(model, **fields):
    with pytest.raises(IntegrityError), transaction.atomic():
        model.objects.create(**fields)


@pytest.fixture
def active_record(db, corpus):
    return MemoryRecord.objects.get(record_ref=_ingest()["record_ref"])


def test_constraint_one_active_record_per_candidate_per_corpus(active_record):
    _raises(
        MemoryRecord,
        **_clone(active_record, record_ref="rmr_" + "1" * 64, provider_resource_ref="other"),
    )


def test_constraint_resource_ref_unique_per_corpus(active_record):
    _raises(
        MemoryRecord,
        **_clone(active_record, record_ref="rmr_" + "2" * 64, lifecycle_state="pending_activation"),
    )


def test_constraint_lifecycle_state_is_known(active_record):
    _raises(
        MemoryRecord,
        **_clone(
            active_record,
            record_ref="rmr_" + "3" * 64,
            provider_resource_ref="x3",
            lifecycle_state="zombie",
        ),
    )


def test_constraint_active_needs_verified_readback(active_record):
    _raises(
        MemoryRecord,
        **_clone(
            active_record,
            record_ref="rmr_" + "4" * 64,
            provider_resource_ref="x4",
            candidate_ref="cand_" + "4" * 64,
            readback_verified_at=None,
        ),
    )


def test_constraint_superseded_names_its_successor(active_record):
    _raises(
        MemoryRecord,
        **_clone(
            active_record,
            record_ref="rmr_" + "5" * 64,
            provider_resource_ref="x5",
            lifecycle_state="superseded",
            superseded_by_id=None,
        ),
    )


def test_constraint_transition_seq_unique_and_state_entered_once(active_record):
    first = RecordTransition.objects.filter(record=active_record).first()
    _raises(RecordTransition, **_clone(first, to_state="retired"))
    _raises(RecordTransition, **_clone(first, seq=9))


def test_constraints_of_corpus(active_record):
    corpus = active_record.corpus
    _raises(Corpus, **_clone(corpus, corpus_id="c2", memory_class="gossip"))
    _raises(Corpus, **_clone(corpus, corpus_id="c3", revision=0))


def test_constraints_of_standing_policy(active_record):
    policy = StandingPolicy.objects.get()
    _raises(StandingPolicy, **_clone(policy, active=False))  # same digest
    _raises(StandingPolicy, **_clone(policy, policy_digest="sha256:" + "9" * 64))  # 2 active


def test_constraints_of_candidates_and_reviews(db, corpus):
    review = review_documents.decision(
        services.review_candidate(
            candidate=f.candidate(),
            decision="accept",
            corpus_id="prefs",
            principal=f.op(f.REVIEWER),
            execute=True,
        )
    )
    candidate = Candidate.objects.get()
    _raises(Candidate, **_clone(candidate))
    row = Review.objects.get(review_id=review["review_id"])
    _raises(Review, **_clone(row, review_id="rmrv_x", guard_status="guard_blocked"))
    _raises(Review, **_clone(row, review_id="rmrv_y", effective_decision="maybe"))


def test_constraints_of_ingest_events(active_record):
    event = IngestEvent.objects.get()
    _raises(IngestEvent, **_clone(event))
    _raises(IngestEvent, **_clone(event, event_ref="rme_other", status="lost"))


def test_constraints_of_recall_and_application_receipts(active_record):
    result = f.recalled(request=f.recall_request(active_record.corpus), execute=True)
    recall = RecallReceipt.objects.get(recall_id=result["recall_id"])
    _raises(RecallReceipt, **_clone(recall, recall_id="rmc_other", query_count=4))
    f.applied(
        document={
            "schema_version": "reward_memory_application_v0",
            "recall_id": recall.recall_id,
            "decision": "ignore",
            "memory_refs": [],
            "reasoning_summary": "Not relevant here.",
            "artifact_verification": {"artifact_ref": "pr:1", "verified": False},
        },
        execute=True,
    )
    application = ApplicationReceipt.objects.get()
    _raises(ApplicationReceipt, **_clone(application, application_receipt_id="rma_x", status="won"))


def test_constraint_local_provider_resource_unique(active_record):
    doc = LocalProviderDocument.objects.get()
    _raises(LocalProviderDocument, **_clone(doc))


def test_pending_record_creation_is_idempotent(db, corpus):
    receipt = _ingest()
    record = MemoryRecord.objects.get()
    plan = activation.ActivationPlan(
        corpus=corpus,
        candidate=record.content and f.candidate(),
        candidate_ref=record.candidate_ref,
        basis="standing_policy",
        basis_ref=record.policy_digest,
        observed_at=record.observed_at,
        expires_at=None,
    )
    activation.build_plan(plan)
    assert plan.record_ref == receipt["record_ref"]
    assert activation.ensure_pending_record(plan, now=f.NOW).pk == record.pk
    assert records.activate(record, actor=f.OWNER, now=f.NOW).lifecycle_state == "active"
    assert MemoryRecord.objects.count() == 1


def test_active_record_envelope_carries_the_full_record_contract(db, corpus):
    from reward_memory import selectors

    receipt = _ingest(expires_at="2027-01-01T00:00:00Z")
    envelope = registry.record_envelope(selectors.get_record(receipt["record_ref"]))
    assert envelope["schema_version"] == "reward_memory_active_record_v0"
    for key in (
        "memory_class",
        "source",
        "scope",
        "authority",
        "confidence",
        "lifecycle_state",
        "supersession",
        "revocation",
        "expiry",
        "privacy",
    ):
        assert key in envelope
    assert envelope["source"]["kind"] == "maintainer_feedback"
    assert envelope["scope"]["surface"] == f.SURFACE
    assert envelope["authority"] == {
        "kind": "advisory",
        "action_scopes": [],
        "checkpoint_ref": None,
        "authority_source": f.AUTHORITY,
    }
    assert envelope["confidence"]["level"] == "medium"
    assert envelope["privacy"]["raw_content_captured"] is False
    assert envelope["expiry"] == {"expires_at": "2027-01-01T00:00:00Z"}
    assert envelope["activation"]["writer"] == f.OWNER
    assert envelope["activation"]["basis"] == "standing_policy"
    assert envelope["supersession"] == {"supersedes": [], "superseded_by": None}
