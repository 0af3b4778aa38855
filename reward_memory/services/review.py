"""Stage 2: candidate review decisions, and applying an accepted/retire decision.

A review is a decision *record*, not persistence. ``accept`` and ``retire`` return the
next step; ``apply_review`` is that step, performed with the corpus owner's write
authority (accept → envelope, provider sync, exact readback, activation; retire →
close the record). A guard-blocked candidate stays inspectable but any accept/edit
collapses to an effective ``no_write``.
"""

import dataclasses
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from loopx_site.core import clock
from loopx_site.core.access import visible_or_not_found
from loopx_site.core.canonical import nfc, prefixed_id
from loopx_site.core.rows import get_or_create_once
from reward_memory import contracts as c
from reward_memory import principals, selectors
from reward_memory.documents import review as review_documents
from reward_memory.domain import candidates, guards, privacy
from reward_memory.domain import validation as v
from reward_memory.domain.guards import Reason
from reward_memory.errors import RewardMemoryError, invalid
from reward_memory.models import Candidate, Corpus, MemoryRecord, Review
from reward_memory.principals import Principal
from reward_memory.services import activation, duplicates, lineage, records, roles

EDITABLE = (
    "content_summary",
    "reasoning_summary",
    "confidence",
    "requested_action_scopes",
    "expires_at",
)


@dataclass(frozen=True)
class ReviewDecision:
    """A review decision (``documents.review.decision`` renders it): the candidate as
    given and its evaluation, the requested and effective decision, the next step;
    ``row`` is the recorded ``Review`` once executed (its stored document is the answer)."""

    review_id: str
    corpus_id: str | None
    candidate: Any
    adapter: str | None
    evaluation: candidates.CandidateEvaluation
    decision: str
    effective: str
    reviewer: str | None
    revised: candidates.CandidateEvaluation | None
    target_record_ref: str | None
    next_step: dict[str, Any] | None
    preview_review: dict[str, str] | None = None
    duplicate_of: duplicates.Match | None = None
    distinct: bool = False
    row: Review | None = None


@dataclass(frozen=True)
class ReviewStep:
    """What ``apply_review`` did with a recorded review (``documents.review.review_step``
    renders its activation receipt). ``step``: ``blocked`` (the guards block the accept
    now; ``guard``), ``activate`` (``plan``, and once executed ``outcome``), ``merge``
    (an accepted duplicate's evidence joins ``record``; executed: ``evidence`` and the
    record's ``evidence_count``) or ``retire`` (``record``, once executed)."""

    review: Review
    step: str
    executed: bool
    guard: dict[str, Any] | None = None
    plan: activation.ActivationPlan | None = None
    outcome: activation.ActivationOutcome | None = None
    record: MemoryRecord | None = None
    evidence: Any = None
    evidence_count: int | None = None


def _roles(corpus: Corpus | None, principal: Principal | None, now):
    """The server-resolved role bindings of a review bound to ``corpus`` (``None``
    without a corpus: a stateless review activates nothing)."""
    return roles.source_role_bindings(corpus, principal, now=now) if corpus else None


def _evaluate(document: Any, *, now, corpus: Corpus | None, principal: Principal | None = None):
    binding = selectors.corpus_binding(corpus) if corpus else None
    lookup = selectors.checkpoint_lookup(now)
    bindings = _roles(corpus, principal, now)
    if isinstance(document, dict) and document.get("schema_version") in candidates.ADAPTERS:
        adapted = candidates.adapt_and_evaluate(
            document, now=now, corpus=binding, checkpoints=lookup, roles=bindings
        )
        evaluation, adapter = adapted.evaluation, adapted.adapter.adapter_id
    else:
        evaluation = candidates.evaluate(
            document, now=now, corpus=binding, checkpoints=lookup, roles=bindings
        )
        adapter = None
    return _with_closure(evaluation, corpus), adapter


def _with_closure(evaluation, corpus: Corpus | None):
    """Add ``lineage_closed`` when the corpus closed this candidate (or its content)."""
    if corpus is not None and evaluation.candidate is not None:
        closure = selectors.open_closure(corpus, evaluation.candidate, evaluation.candidate_ref)
        if closure is not None:
            evaluation.reasons = guards.normalise(
                [*evaluation.reasons, Reason("lineage_closed", "candidate_ref")]
            )
    return evaluation


def review_candidate(
    *,
    candidate: Any,
    decision: str,
    principal: Principal | None = None,
    corpus_id: str | None = None,
    edit: dict[str, Any] | None = None,
    record_ref: str | None = None,
    execute: bool = False,
    viewer: tuple[str, str | None] | None = None,
    preview_review: dict[str, str] | None = None,
    distinct: bool = False,
) -> ReviewDecision:
    """The review of ``candidate`` for ``decision`` (its document:
    ``reward_memory_candidate_review_v0``).

    ``candidate`` is a ``reward_memory_candidate_v0`` or an adapter input (mapped by its
    pure adapter). Without ``corpus_id`` the review is stateless (no scope binding to a
    corpus); ``execute`` records the candidate and review and needs the corpus, and the
    authenticated ``principal`` must *be* its reviewer (an operator account equal to the
    declared reviewer, or a host token an operator bound to the reviewer role). The
    recorded reviewer is that principal. ``viewer`` limits which corpora exist for a
    Goal-scoped caller. A recorded ``reject`` closes the candidate's lineage.
    ``preview_review`` (a shipped case's fixture review: LoopX's ``review`` labels) is
    shown in an unrecorded preview only; it names no reviewer and grants nothing.
    A candidate restating a live record of the corpus is marked ``duplicate_of`` it
    (``services.duplicates``); accepting it adds its evidence to that record when
    applied, unless the reviewer says it is ``distinct``.
    """
    v.choice(decision, "decision", c.DECISIONS)
    corpus = _reviewing_corpus(corpus_id, viewer, principal, execute=execute)
    # the recorded reviewer is the authenticated principal (a preview names nobody)
    reviewer = principal.actor_ref if (execute and principal is not None) else None
    now = clock.now()
    evaluation, adapter = _evaluate(candidate, now=now, corpus=corpus, principal=principal)
    duplicate = _duplicate(corpus, evaluation)
    effective = decision
    revised = None
    target = None
    if decision in ("accept", "edit") and evaluation.blocked:
        effective = "no_write"
    if decision == "edit":
        effective, revised = _revision(edit, evaluation, effective, corpus, principal, now)
    if decision == "retire" and (corpus is not None or record_ref is not None or execute):
        target = _retire_target(corpus, record_ref, evaluation, viewer)
    review_id = prefixed_id(
        "rmrv_",
        {
            "candidate_ref": evaluation.candidate_ref,
            "corpus_id": corpus.corpus_id if corpus else None,
            "requested_decision": decision,
            "reviewer": reviewer,
            "edit": nfc(edit) if decision == "edit" else None,
            "record_ref": record_ref if decision == "retire" else None,
            **({"distinct": True} if distinct else {}),
        },
    )
    result = ReviewDecision(
        review_id=review_id,
        corpus_id=corpus.corpus_id if corpus else None,
        candidate=candidate,
        adapter=adapter,
        evaluation=evaluation,
        decision=decision,
        effective=effective,
        reviewer=reviewer,
        revised=revised,
        target_record_ref=target.record_ref if target else None,
        next_step=_next_step(effective, corpus, revised, None if distinct else duplicate),
        preview_review=None if execute else preview_review,
        duplicate_of=duplicate,
        distinct=distinct,
    )
    if not execute:
        return result
    return dataclasses.replace(result, row=_record(result, corpus, target, now))


def _reviewing_corpus(corpus_id, viewer, principal: Principal | None, *, execute: bool):
    """The corpus the review is bound to (``None``: a stateless review); recording one
    needs the corpus and its declared reviewer (``roles.acts_as``)."""
    corpus = (
        selectors.get_corpus(v.identifier(corpus_id, "corpus_id"), viewer=viewer)
        if corpus_id
        else None
    )
    if execute:
        if corpus is None:
            raise invalid("corpus_id", "recording a review needs `corpus_id`")
        if not roles.acts_as(principal, corpus, c.REVIEWER_ROLE):
            raise RewardMemoryError(
                "reviewer_not_authorized",
                "Only the corpus's declared reviewer records reviews.",
                field="reviewer",
            )
    return corpus


def _revision(edit, evaluation, effective: str, corpus, principal, now):
    """An edit decision: ``(effective, revised)`` — the revised candidate (only the
    ``EDITABLE`` fields, lineage to the original) evaluated like a new one; a blocked
    original or revision writes nothing (``no_write``)."""
    if not isinstance(edit, dict) or not edit:
        raise invalid("edit", "an edit decision needs the edited fields")
    for key in edit:
        if key not in EDITABLE:
            raise invalid(f"edit.{key}", f"only {', '.join(EDITABLE)} can be edited")
    if effective != "edit":
        return effective, None
    revised_doc = {**evaluation.candidate, **nfc(edit)}
    revised_doc["lineage"] = {"prior_candidate_ref": evaluation.candidate_ref}
    revised = _with_closure(
        candidates.evaluate(
            revised_doc,
            now=now,
            corpus=selectors.corpus_binding(corpus) if corpus else None,
            checkpoints=selectors.checkpoint_lookup(now),
            roles=_roles(corpus, principal, now),
        ),
        corpus,
    )
    return ("no_write" if revised.blocked else effective), revised


def _retire_target(corpus: Corpus | None, record_ref, evaluation, viewer):
    """The active record of this candidate in ``corpus`` a retire decision closes."""
    if corpus is None:
        raise invalid("corpus_id", "retiring needs the record's `corpus_id`")
    v.ref(record_ref, "record_ref")
    target = selectors.get_record(record_ref, viewer=viewer)
    if target.corpus_id != corpus.pk or target.candidate_ref != evaluation.candidate_ref:
        raise invalid("record_ref", "the record is not this candidate's record in the corpus")
    if target.lifecycle_state != c.ACTIVE:
        raise RewardMemoryError(
            "invalid_transition",
            f"Only an active record can be retired (it is {target.lifecycle_state}).",
            field="record_ref",
        )
    return target


def _duplicate(corpus: Corpus | None, evaluation) -> duplicates.Match | None:
    """The live record of ``corpus`` the candidate restates (``None`` without a corpus)."""
    if corpus is None or evaluation.candidate is None:
        return None
    return duplicates.find_duplicate(
        corpus=corpus, candidate=evaluation.candidate, candidate_ref=evaluation.candidate_ref
    )


def _next_step(
    effective: str, corpus: Corpus | None, revised, duplicate=None
) -> dict[str, Any] | None:
    owner = corpus.owner if corpus else None
    if effective == "accept" and duplicate is not None:
        return {
            "action": "add_evidence_to_record",
            "record_ref": duplicate.record.record_ref,
            "performed_by": "corpus_owner",
            "actor": owner,
            "requires": [],
        }
    if effective == "accept":
        return {
            "action": "activate_record",
            "performed_by": "corpus_owner",
            "actor": owner,
            "requires": ["provider_sync", "exact_readback"],
        }
    if effective == "retire":
        return {
            "action": "retire_record",
            "performed_by": "corpus_owner_or_retirement_authority",
            "actor": owner,
            "requires": [],
        }
    if effective == "edit":
        return {
            "action": "review_revised_candidate",
            "candidate_ref": revised.candidate_ref,
            "requires": ["review"],
        }
    return None


def _record(result: ReviewDecision, corpus, target, now) -> Review:
    """Persist candidate(s) and the review, its document rendered once, here; idempotent
    on ``review_id`` (a repeat answers the review stored first)."""
    evaluation, revised = result.evaluation, result.revised
    document = review_documents.review(result)
    with transaction.atomic():
        candidate_row = _store_candidate(corpus, evaluation, now, result.duplicate_of)
        if revised is not None:
            _store_candidate(corpus, revised, now)
        # the record's text is shown, never stored with the review: it stays the record's
        # (retired or erased with it), the stored review keeps its ref and the similarity
        shown = document["duplicate_of"]
        stored = {**document, "recorded": True, "duplicate_of": _without_text(shown)}
        review, _ = get_or_create_once(
            Review.objects,
            review_id=document["review_id"],
            defaults={
                "corpus": corpus,
                "candidate": candidate_row,
                "requested_decision": document["requested_decision"],
                "effective_decision": document["effective_decision"],
                "reviewer": document["reviewer"],
                "guard_status": evaluation.guard_status,
                "target_record_ref": target.record_ref if target else "",
                "revised_candidate_ref": revised.candidate_ref if revised else "",
                "document": stored,
                "created_at": now,
            },
        )
        if document["effective_decision"] == "reject":
            lineage.close_lineage(
                corpus=corpus,
                candidate=evaluation.candidate,
                candidate_ref=evaluation.candidate_ref,
                reason="reject",
                actor=document["reviewer"],
                reference=document["review_id"],
                now=now,
            )
    return review


def _without_text(duplicate: dict[str, Any] | None) -> dict[str, Any] | None:
    if duplicate is None:
        return None
    return {key: value for key, value in duplicate.items() if key != "record_summary"}


def _store_candidate(corpus: Corpus, evaluation, now, duplicate=None) -> Candidate:
    candidate = evaluation.candidate or {}
    scope = candidate.get("scope") or {}
    try:
        with transaction.atomic():
            row, _ = Candidate.objects.get_or_create(
                corpus=corpus,
                candidate_ref=evaluation.candidate_ref,
                defaults={
                    "target_class": candidate.get("target_class") or "",
                    "project": scope.get("project") or "",
                    "surface": scope.get("surface") or "",
                    "document": evaluation.candidate,
                    "guard_status": evaluation.guard_status,
                    "guard_reasons": guards.payload(evaluation.reasons),
                    "prior_candidate_ref": (candidate.get("lineage") or {}).get(
                        "prior_candidate_ref", ""
                    ),
                    "duplicate_of": duplicate.record.record_ref if duplicate else "",
                    "duplicate_similarity": duplicate.similarity if duplicate else None,
                    "created_at": now,
                },
            )
    except IntegrityError:
        row = Candidate.objects.get(corpus=corpus, candidate_ref=evaluation.candidate_ref)
    return row


def get_review(review_id: str, *, viewer: selectors.Viewer = None) -> Review:
    """The recorded review, if ``viewer`` may see its corpus; a review of a corpus the
    viewer may not read is reported exactly like a missing one (``review_not_found``)."""
    return visible_or_not_found(
        Review.objects.select_related("corpus", "candidate").filter(review_id=review_id).first(),
        lambda review: privacy.visible_to(review.corpus, viewer),
        lambda: RewardMemoryError("review_not_found", "No such review.", field="review_id"),
    )


def apply_review(*, review_id: str, principal: Principal, execute: bool = False) -> ReviewStep:
    """Perform a recorded review's next step with the corpus's write authority.

    accept → the corpus owner (the authenticated principal must be it:
    ``owner_not_authorized``) activates the candidate (envelope, provider sync, exact
    readback; idempotent on the deterministic record ref); retire → the owner or the
    retirement authority closes the record and its lineage. Planned unless ``execute``.
    """
    review = get_review(review_id)
    corpus = review.corpus
    effective = review.effective_decision
    if effective not in ("accept", "retire"):
        raise RewardMemoryError(
            "review_not_actionable",
            f"A {effective} review has no write step.",
            field="review_id",
        )
    if effective == "retire":
        return _apply_retire(review, principal, execute=execute)
    if not roles.acts_as(principal, corpus, c.OWNER_ROLE):
        raise RewardMemoryError(
            "owner_not_authorized",
            "Only the corpus's declared owner persists an accepted review.",
            field="actor",
        )
    evaluation, bindings = _accepted_evaluation(review, principal)
    if evaluation.blocked:
        return ReviewStep(review, "blocked", execute, guard=evaluation.guard_payload())
    merged = _merge_duplicate(review, evaluation, principal, execute=execute)
    if merged is not None:
        return merged
    plan = activation.build_plan(
        activation.ActivationPlan(
            corpus=corpus,
            candidate=evaluation.candidate,
            candidate_ref=evaluation.candidate_ref,
            basis="review",
            basis_ref=review.review_id,
            observed_at=review.created_at,
            expires_at=evaluation.expires_at,
            review=review,
            actor_peer_id=roles.owner_write_peer(corpus),
            source_binding=guards.source_binding(evaluation.candidate, bindings),
        )
    )
    if not execute:
        return ReviewStep(review, "activate", False, plan=plan)
    outcome = activation.sync_and_verify(plan)
    if outcome.status == c.INGEST_ACTIVATED:
        _mark_applied(review, plan.record_ref)
    return ReviewStep(review, "activate", True, plan=plan, outcome=outcome)


def _accepted_evaluation(review: Review, principal: Principal):
    """The accepted candidate evaluated again now, with the applying owner's bindings
    and the recorded reviewer's if it is (still) an active operator account — the roles
    the accept was decided under, re-read now: ``(evaluation, bindings)``."""
    now = clock.now()
    corpus = review.corpus
    bindings = _roles(corpus, principal, now) | _roles(corpus, _recorded_reviewer(review), now)
    evaluation = _with_closure(
        candidates.evaluate(
            review.candidate.document,
            now=now,
            corpus=selectors.corpus_binding(corpus),
            checkpoints=selectors.checkpoint_lookup(now),
            roles=bindings,
        ),
        corpus,
    )
    return evaluation, bindings


def _apply_retire(review: Review, principal: Principal, *, execute: bool) -> ReviewStep:
    """The owner or the retirement authority closes the reviewed record and its lineage."""
    corpus = review.corpus
    if not (
        roles.acts_as(principal, corpus, c.OWNER_ROLE)
        or roles.acts_as(principal, corpus, c.RETIREMENT_ROLE)
    ):
        raise RewardMemoryError(
            "not_authorized",
            "Only the corpus owner or retirement authority retires.",
            field="actor",
        )
    if not execute:
        return ReviewStep(review, "retire", False)
    record = selectors.get_record(review.target_record_ref)
    with transaction.atomic():  # the retire and the review's applied mark are one write
        if record.lifecycle_state != c.RETIRED:
            record = records.retire_record(
                record_ref=review.target_record_ref,
                principal=principal,
                reason_summary=f"review {review.review_id}",
            )
        _mark_applied(review, record.record_ref)
    return ReviewStep(review, "retire", True, record=record)


def _merge_duplicate(review: Review, evaluation, principal, *, execute: bool):
    """An accepted duplicate (not said distinct) adds its evidence to the live record it
    restates instead of activating a second record; ``None`` when the review is no
    duplicate or that record is no longer live (then it activates as usual)."""
    step = (review.document or {}).get("next_step") or {}
    if step.get("action") != "add_evidence_to_record":
        return None
    record = selectors.live_records(review.corpus).filter(record_ref=step.get("record_ref")).first()
    if record is None:
        return None
    if not execute:
        return ReviewStep(review, "merge", False, record=record)
    with transaction.atomic():  # the evidence and the review's applied mark are one write
        evidence = lineage.add_evidence(
            record=record,
            candidate=evaluation.candidate,
            candidate_ref=evaluation.candidate_ref,
            review=review,
            similarity=review.candidate.duplicate_similarity,
            actor=principal.actor_ref,
            now=clock.now(),
        )
        _mark_applied(review, record.record_ref)
    return ReviewStep(
        review, "merge", True, record=record, evidence=evidence,
        evidence_count=record.evidence.count(),
    )  # fmt: skip


def _recorded_reviewer(review: Review) -> Principal | None:
    if not (review.reviewer or "").startswith("user:"):
        return None
    try:
        return principals.operator_account(review.reviewer, field="reviewer")
    except RewardMemoryError:
        return None


def _mark_applied(review: Review, record_ref: str) -> None:
    Review.objects.filter(pk=review.pk, applied_at__isnull=True).update(
        applied_at=clock.now(), applied_record_ref=record_ref
    )
