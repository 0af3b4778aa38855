"""Record lifecycle: every state change goes through ``_transition`` and is journaled.

States and allowed moves are ``contracts.TRANSITIONS`` (pending_activation → active →
superseded | revoked | retired | expired; a pending record may be retired). No state is
entered twice (``RecordTransition`` backs this with a unique constraint).
"""

import datetime as dt
import logging
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Max, Q

from loopx_site.core import clock
from reward_memory import contracts as c
from reward_memory import principals, selectors
from reward_memory.domain import validation as v
from reward_memory.errors import RewardMemoryError
from reward_memory.models import MemoryRecord, RecordTransition
from reward_memory.principals import Principal
from reward_memory.services import provider_deletions, roles
from reward_memory.services.lineage import close_evidence_lineages, close_lineage

logger = logging.getLogger("reward_memory")

#: The states whose provider copy is deleted (through ``provider_deletions``).
CLOSED_STATES = (c.RETIRED, c.REVOKED, c.SUPERSEDED, c.EXPIRED, *c.EXPERIENCE_MARKS)
SYSTEM_EXPIRY = "system:expiry"
SYSTEM_CHECKPOINT = "system:checkpoint_revocation"
SYSTEM_ERASURE = "system:goal_erasure"


def _transition(
    record: MemoryRecord,
    to_state: str,
    reason: str,
    *,
    actor: str,
    reference: str = "",
    now: dt.datetime,
    **updates: Any,
) -> MemoryRecord:
    """Move one record to ``to_state`` and journal it.

    Call inside ``transaction.atomic()``; locks the record row (SELECT FOR UPDATE) and
    re-checks the state, so a concurrent transition loses with ``invalid_transition``.
    """
    locked = MemoryRecord.objects.select_for_update().get(pk=record.pk)
    if to_state not in c.TRANSITIONS[locked.lifecycle_state]:
        raise RewardMemoryError(
            "invalid_transition",
            f"A {locked.lifecycle_state} record cannot become {to_state}.",
            field="record_ref",
            details={"from": locked.lifecycle_state, "to": to_state},
        )
    changed = MemoryRecord.objects.filter(
        pk=locked.pk, lifecycle_state=locked.lifecycle_state
    ).update(lifecycle_state=to_state, state_changed_at=now, **updates)
    if changed != 1:  # pragma: no cover - the row lock makes this unreachable
        raise RewardMemoryError("invalid_transition", "The record changed concurrently.")
    seq = (locked.transitions.aggregate(m=Max("seq"))["m"] or 0) + 1
    RecordTransition.objects.create(
        record=locked,
        seq=seq,
        from_state=locked.lifecycle_state,
        to_state=to_state,
        reason=reason,
        actor=actor,
        reference=reference,
        at=now,
    )
    if to_state in CLOSED_STATES:
        provider_deletions.enqueue(locked, reason=reason, now=now)
    locked.refresh_from_db()
    return locked


def journal_creation(record: MemoryRecord, *, actor: str, now: dt.datetime) -> None:
    """The first history row of a new (pending) record. Call in the creating transaction."""
    RecordTransition.objects.create(
        record=record,
        seq=1,
        from_state="",
        to_state=record.lifecycle_state,
        reason="created",
        actor=actor,
        at=now,
    )


def activate(
    record: MemoryRecord, *, actor: str, now: dt.datetime, prior_candidate_ref: str | None = None
) -> MemoryRecord:
    """pending_activation → active after an exact readback; supersedes in the same
    transaction the corpus's active record of the same candidate (a new standing-policy
    or review basis) and of the edited prior candidate, if any.

    Call inside ``transaction.atomic()``.
    """
    locked = MemoryRecord.objects.select_for_update().get(pk=record.pk)
    if locked.lifecycle_state == c.ACTIVE:
        return locked
    olds = MemoryRecord.objects.select_for_update().filter(
        corpus_id=locked.corpus_id, lifecycle_state=c.ACTIVE
    )
    predecessor = Q(candidate_ref=locked.candidate_ref)
    if prior_candidate_ref:
        predecessor |= Q(candidate_ref=prior_candidate_ref)
    for old in olds.filter(predecessor).exclude(pk=locked.pk):
        _transition(
            old, c.SUPERSEDED, "superseded_on_activation", actor=actor, now=now,
            reference=locked.record_ref, superseded_by=locked,
        )  # fmt: skip
    return _transition(
        locked, c.ACTIVE, "readback_verified", actor=actor, now=now,
        readback_verified_at=now, activated_at=now,
    )  # fmt: skip


def _deindex(record: MemoryRecord) -> None:
    """The first attempt of the closed record's queued provider delete (the outbox row
    ``_transition`` wrote). Recall filters by LoopX lifecycle regardless, so a failure
    here never re-exposes the record: the row stays ``pending`` for the worker."""
    provider_deletions.attempt_record(record)


def _candidate_of(record: MemoryRecord) -> dict[str, Any]:
    """The identity fields a closed lineage is matched on, from a record."""
    return {
        "target_class": record.memory_class,
        "scope": {"project": record.project, "surface": record.surface},
        "content_summary": record.summary,
    }


OPERATION_ROLES = {
    "retire": (c.RETIREMENT_ROLE, c.OWNER_ROLE),
    "revoke": (c.AUTHORITY_SOURCE_ROLE, c.OWNER_ROLE),
    "supersede": (c.OWNER_ROLE,),
    "mark": (c.OWNER_ROLE, c.RETIREMENT_ROLE),
    "operator_edit": (c.OWNER_ROLE,),
    "operator_retire": (c.RETIREMENT_ROLE, c.OWNER_ROLE),
}
OPERATION_PERMISSIONS = {
    "retire": "retire_record",
    "revoke": "revoke_record",
    "supersede": "supersede_record",
    "mark": "mark_experience",
    "operator_edit": "operator_control",
    "operator_retire": "operator_control",
}
VERBS = {
    "retire": "retire",
    "revoke": "revoke",
    "supersede": "supersede",
    "mark": "mark",
    "operator_edit": "prepare an operator edit of",
    "operator_retire": "prepare an operator retire of",
}
ROLE_NAMES = {
    c.OWNER_ROLE: "owner",
    c.RETIREMENT_ROLE: "retirement authority",
    c.AUTHORITY_SOURCE_ROLE: "authority source",
}


def authorize_record_operation(principal: Principal | None, corpus, operation: str) -> None:
    """The one rule for who may change a record's lifecycle (or prepare an operator
    control for it): an operator account must hold the operation's model permission
    (``permission_required``) and, like a host token, act as one of the corpus roles
    the operation needs (``owner_not_authorized`` / ``not_authorized``; the message names
    the accounts that do)."""
    principals.require_permission(principal, OPERATION_PERMISSIONS[operation])
    allowed = OPERATION_ROLES[operation]
    if any(roles.acts_as(principal, corpus, role) for role in allowed):
        return
    holders = [
        f"the corpus {ROLE_NAMES[role]} ({getattr(corpus, roles.ROLE_FIELDS[role])})"
        for role in allowed
    ]
    raise RewardMemoryError(
        "owner_not_authorized" if allowed == (c.OWNER_ROLE,) else "not_authorized",
        f"Only {' or '.join(holders)} may {VERBS[operation]} records of corpus {corpus.corpus_id}"
        " (or a host token an operator bound to that role).",
        field="actor",
        details={
            "operation": operation,
            "authorized": [getattr(corpus, roles.ROLE_FIELDS[role]) for role in allowed],
        },
    )


def check_record_operation(record: MemoryRecord, *, principal: Principal, operation: str) -> None:
    """The preview of a lifecycle operation: may this principal perform it (no write)?"""
    authorize_record_operation(principal, record.corpus, operation)


@dataclass(frozen=True)
class RecordOperation:
    """One lifecycle operation on ``record``, previewed or performed; a performed one
    carries the record's ``lifecycle_state`` read back fresh from the database and its
    provider delete (``selectors.provider_deletion_state``)."""

    record: MemoryRecord
    operation: str
    executed: bool
    lifecycle_state: str | None = None
    provider_deletion: dict[str, Any] | None = None


def record_operation(
    operation: str,
    *,
    record_ref: str,
    principal: Principal,
    execute: bool = False,
    viewer: selectors.Viewer = None,
    **arguments: Any,
) -> RecordOperation:
    """Preview or perform one lifecycle operation (``revoke``, ``supersede``, ``retire``,
    ``mark``) and return what it did (``documents.records.record_operation`` renders it).

    The record is looked up as ``viewer`` sees it (one it may not see is
    ``record_not_found``). A preview checks only that ``principal`` may perform it (no
    write); ``execute`` performs it with ``arguments`` (``revocation_ref``,
    ``by_record_ref``, ``reason_summary``, ``state`` + ``source_truth_ref``)."""
    record = selectors.get_record(record_ref, viewer=viewer)
    name = f"mark_{arguments['state']}" if operation == "mark" else operation
    if not execute:
        check_record_operation(record, principal=principal, operation=operation)
        return RecordOperation(record, name, executed=False)
    if operation == "supersede":
        arguments["viewer"] = viewer
    perform = {
        "revoke": revoke_record,
        "supersede": supersede_record,
        "retire": retire_record,
        "mark": mark_experience,
    }[operation]
    record = perform(record_ref=record_ref, principal=principal, **arguments)
    return RecordOperation(
        record,
        name,
        executed=True,
        lifecycle_state=selectors.fresh_lifecycle_state(record),
        provider_deletion=selectors.provider_deletion_state(record),
    )


def _authorized(record_ref: str, principal: Principal, operation: str) -> MemoryRecord:
    """The record ``record_ref`` once ``principal`` may perform ``operation`` on it."""
    record = selectors.get_record(record_ref)
    authorize_record_operation(principal, record.corpus, operation)
    return record


def _close(
    record: MemoryRecord,
    to_state: str,
    reason: str,
    *,
    actor: str,
    now: dt.datetime,
    reference: str = "",
    lineage: tuple[str, str] | None = None,
    **updates: Any,
) -> MemoryRecord:
    """One operator-driven transition and, when ``lineage`` is ``(reason, reference)``,
    the closing of the record's candidate lineage, in one transaction; then the best
    effort provider de-index."""
    with transaction.atomic():
        record = _transition(
            record, to_state, reason, actor=actor, reference=reference, now=now, **updates
        )
        if lineage is not None:
            close_lineage(
                corpus=record.corpus,
                candidate=_candidate_of(record),
                candidate_ref=record.candidate_ref,
                reason=lineage[0],
                actor=actor,
                reference=lineage[1],
                now=now,
            )
            close_evidence_lineages(
                record=record, reason=lineage[0], actor=actor, reference=lineage[1], now=now
            )
    _deindex(record)
    return record


def retire_record(
    *, record_ref: str, principal: Principal, reason_summary: str | None = None
) -> MemoryRecord:
    """Close an active (or still pending) record and its candidate lineage. Only the
    corpus's declared ``retirement_authority`` or owner (authenticated) may retire."""
    record = _authorized(record_ref, principal, "retire")
    actor, now = principal.actor_ref, clock.now()
    retirement = {"actor": actor, "at": clock.iso(now), "reason_summary": reason_summary}
    lineage = ("retire", record.record_ref)
    return _close(
        record, c.RETIRED, "retired", actor=actor, now=now, lineage=lineage, retirement=retirement
    )


def revoke_record(*, record_ref: str, principal: Principal, revocation_ref: str) -> MemoryRecord:
    """Revoke an active record and close its lineage (the corpus's authority source or
    owner, authenticated)."""
    record = _authorized(record_ref, principal, "revoke")
    actor, now = principal.actor_ref, clock.now()
    revocation = {"revocation_ref": revocation_ref, "actor": actor, "at": clock.iso(now)}
    return _close(
        record, c.REVOKED, "revoked", actor=actor, now=now, reference=revocation_ref,
        lineage=("revoke", record.record_ref), revocation=revocation,
    )  # fmt: skip


def close_for_checkpoint(record: MemoryRecord, *, checkpoint_id: str, now: dt.datetime) -> None:
    """Revoke one record because its authority checkpoint was revoked (call inside the
    checkpoint revocation's transaction). The lineage stays open: the authority went,
    not the judgement of the content."""
    revocation = {
        "revocation_ref": f"checkpoint:{checkpoint_id}",
        "reason": "checkpoint_revoked",
        "actor": SYSTEM_CHECKPOINT,
        "at": clock.iso(now),
    }
    _transition(
        record, c.REVOKED, "checkpoint_revoked", actor=SYSTEM_CHECKPOINT, reference=checkpoint_id,
        now=now, revocation=revocation,
    )  # fmt: skip
    transaction.on_commit(lambda: _deindex(record))


def close_for_erasure(record: MemoryRecord, *, now: dt.datetime) -> None:
    """Revoke one record whose Goal's memory is being erased (call inside the erasure's
    transaction; ``services.erasure``): recall stops returning it at that commit and the
    transition queues its provider delete. A record already closed stays as it is."""
    allowed = c.TRANSITIONS[record.lifecycle_state]
    closing = {"actor": SYSTEM_ERASURE, "at": clock.iso(now)}
    if c.REVOKED in allowed:
        updates = {"revocation": {"revocation_ref": "goal_erasure", "reason": "erased", **closing}}
        to_state = c.REVOKED
    elif c.RETIRED in allowed:
        updates, to_state = {"retirement": {**closing, "reason_summary": "erased"}}, c.RETIRED
    else:
        return
    _transition(record, to_state, "erased", actor=SYSTEM_ERASURE, now=now, **updates)
    transaction.on_commit(lambda: _deindex(record))


def mark_experience(
    *, record_ref: str, state: str, principal: Principal, source_truth_ref: str
) -> MemoryRecord:
    """New source truth marks an active procedural_experience ``stale``, ``quarantined``
    or ``refuted`` (the corpus owner or retirement authority, authenticated). Recall
    only returns active records, so the mark takes effect at once; ``refuted`` closes
    the lineage like a retire."""
    if state not in c.EXPERIENCE_MARKS:
        raise RewardMemoryError(
            "invalid_argument",
            f"state must be one of {', '.join(c.EXPERIENCE_MARKS)}",
            field="state",
        )
    v.ref(source_truth_ref, "source_truth_ref")
    record = selectors.get_record(record_ref)
    if record.memory_class != c.PROCEDURAL_EXPERIENCE:
        raise RewardMemoryError(
            "invalid_transition",
            "Only procedural_experience records are marked by new source truth.",
            field="record_ref",
        )
    authorize_record_operation(principal, record.corpus, "mark")
    return _close(
        record, state, f"source_truth_{state}", actor=principal.actor_ref, now=clock.now(),
        reference=source_truth_ref,
        lineage=("refute", source_truth_ref) if state == c.REFUTED else None,
    )  # fmt: skip


def supersede_record(
    *,
    record_ref: str,
    by_record_ref: str,
    principal: Principal,
    viewer: selectors.Viewer = None,
) -> MemoryRecord:
    """Mark an active record superseded by another active record of the same corpus and
    surface (the corpus owner's write authority, authenticated). Both refs are looked up
    as ``viewer`` sees them: one it may not see is ``record_not_found``."""
    record = selectors.get_record(record_ref, viewer=viewer)
    successor = selectors.get_record(by_record_ref, viewer=viewer, field="by_record_ref")
    corpus = record.corpus
    authorize_record_operation(principal, corpus, "supersede")
    if (
        successor.corpus_id != record.corpus_id
        or successor.surface != record.surface
        or successor.lifecycle_state != c.ACTIVE
        or successor.pk == record.pk
    ):
        raise RewardMemoryError(
            "invalid_transition",
            "A record is superseded only by another active record of its corpus and surface.",
            field="by_record_ref",
        )
    return _close(
        record, c.SUPERSEDED, "superseded", actor=principal.actor_ref, now=clock.now(),
        reference=successor.record_ref, superseded_by=successor,
    )  # fmt: skip


@dataclass(frozen=True)
class ExpirySweep:
    """What one expiry sweep found due and closed (``documents.records.expiry_sweep``
    renders it)."""

    executed: bool
    due: tuple[str, ...]  # the record refs due (at most 1000 a sweep)
    expired: tuple[str, ...]  # those this sweep closed (executed only)


def expire_due_records(*, corpus_id: str | None = None, execute: bool = False) -> ExpirySweep:
    """Move active records whose ``expires_at`` ≤ now to ``expired`` (recall already
    ignores them; this closes them in the journal and the provider index)."""
    now = clock.now()
    due = MemoryRecord.objects.select_related("corpus").filter(
        lifecycle_state=c.ACTIVE, expires_at__lte=now
    )
    if corpus_id is not None:
        due = due.filter(corpus__corpus_id=corpus_id)
    refs = list(due.values_list("record_ref", flat=True)[:1000])
    expired = []
    if execute:
        for record in due.filter(record_ref__in=refs):
            try:
                with transaction.atomic():
                    record = _transition(record, c.EXPIRED, "expired", actor=SYSTEM_EXPIRY, now=now)
            except RewardMemoryError:
                continue  # closed concurrently
            _deindex(record)
            expired.append(record.record_ref)
    return ExpirySweep(executed=execute, due=tuple(refs), expired=tuple(expired))
