"""Writes of the explicit Agent preference journal (spec Part A, rules 1–11).

Order of checks for ``remember``/``retire``: argument validation → operation-id replay
or conflict (by the digest of the exact canonical arguments) → revision check → rule
checks (retire target, stale source, expiry in the future) → capacity → commit.

Concurrency: a commit runs in one transaction that first locks the scope row
(``SELECT … FOR UPDATE`` on PostgreSQL; on SQLite the IMMEDIATE transaction already
holds the database write lock). The scope's revision advances by compare-and-swap and
the unique constraints (scope, operation id) / (scope, revision) are the backstop: an
``IntegrityError`` from a lost race — e.g. two first writes creating the scope row —
rolls the whole transaction back and is reported as ``revision_conflict`` (or as a
replay when the winner carried the same operation), never as a 500 or a lost write.
"""

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction

from loopx_site.core import clock
from loopx_site.core.canonical import sha256_hex
from loopx_site.core.validation import require_text
from preferences import selectors
from preferences.errors import AREA, PreferenceError, invalid
from preferences.models import PreferenceOperation, PreferenceScope, PreferenceSubject
from preferences.selectors import ScopeRef

KEY_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
OPERATION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")
REVISION_RE = re.compile(r"^[1-9][0-9]{0,9}$")

read = selectors.read_view
history = selectors.history


# -- validation --------------------------------------------------------------------------
def parse_expected_revision(value: Any) -> int | None:
    """``none``/``null`` → ``None``; the opaque revision string (``"3"``) → 3."""
    if value is None or value == "none":
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    if isinstance(value, str) and REVISION_RE.fullmatch(value):
        return int(value)
    raise invalid("expected_revision", "expected_revision must be 'none' or a revision read back")


def _key(value: Any) -> str:
    return require_text(value, "key", max_length=128, pattern=KEY_RE, area=AREA)


def _operation_id(value: Any, *, max_length: int = 128) -> str:
    return require_text(
        value, "operation_id", max_length=max_length, pattern=OPERATION_ID_RE, area=AREA
    )


def _expires_at(value: Any) -> dt.datetime | None:
    if value is None:
        return None
    try:
        return clock.parse_iso_z(value)
    except ValueError:
        raise invalid(
            "expires_at", "expires_at must be a UTC timestamp like 2026-12-01T00:00:00Z"
        ) from None


# -- planning ------------------------------------------------------------------------------
@dataclass
class _Plan:
    """One validated remember/retire request."""

    kind: str
    goal_id: str
    agent_id: str
    key: str
    statement: str | None
    source_ref: str
    source_quote: str
    expected_revision: int | None
    operation_id: str
    expires_at: dt.datetime | None
    args: dict[str, Any] = field(default_factory=dict)

    @property
    def request_digest(self) -> str:
        return sha256_hex(self.args)


def _replay_or_conflict(
    op: PreferenceOperation, plan: _Plan, scope_ref: ScopeRef, scope: PreferenceScope
) -> dict[str, Any]:
    if op.request_digest != plan.request_digest:
        raise PreferenceError(
            "operation_conflict",
            "This operation id was already used with different arguments.",
            field="operation_id",
            details={"operation_id": plan.operation_id},
        )
    return {
        **op.receipt,
        "status": "replayed",
        "view": selectors.view_of(scope_ref, scope),
        "original_receipt": op.receipt,
    }


def _stored(receipt: dict[str, Any]) -> dict[str, Any]:
    """The receipt as kept in the journal: every field but the view. A replay returns
    these fields unchanged with the *current* view, so the journal does not grow by a
    full view per operation."""
    return {k: v for k, v in receipt.items() if k != "view"}


def _revision_conflict(scope_ref: ScopeRef, scope: PreferenceScope | None, expected) -> None:
    view = selectors.view_of(scope_ref, scope)
    raise PreferenceError(
        "revision_conflict",
        "expected_revision is not the current revision; read, reconcile, then retry.",
        field="expected_revision",
        details={
            "expected_revision": None if expected is None else str(expected),
            "current_revision": view["revision"],
            "view": view,
        },
    )


def _lineage_scope_ids(scope: PreferenceScope) -> list[int]:
    ids, current = [], scope
    while current is not None and current.pk not in ids:
        ids.append(current.pk)
        current = current.migrated_from
    return ids


def _evaluate(
    plan: _Plan,
    scope_ref: ScopeRef,
    scope: PreferenceScope | None,
    subjects: list[dict[str, Any]],
    now: dt.datetime,
) -> tuple[dict[str, Any], list[dict[str, Any]], str | None, int]:
    """Apply the rules to the current state; return (new record, new records,
    predecessor operation id, resulting revision) or raise the coded error."""
    current_revision = scope.revision if scope is not None else None
    if plan.expected_revision != current_revision:
        _revision_conflict(scope_ref, scope, plan.expected_revision)

    existing = next((r for r in subjects if r["key"] == plan.key), None)
    if plan.kind == "retire":
        if existing is None:
            raise PreferenceError("not_found", f"No subject {plan.key!r} to retire.", field="key")
        if existing["state"] == "retired":
            raise PreferenceError(
                "already_retired", f"Subject {plan.key!r} is already retired.", field="key"
            )
    elif existing is not None and existing["state"] == "retired":
        used = PreferenceOperation.objects.filter(
            scope_id__in=_lineage_scope_ids(scope), key=plan.key, source_ref=plan.source_ref
        ).exists()
        if used:
            raise PreferenceError(
                "stale_source",
                "Re-remembering a retired key needs a fresh explicit source.",
                field="source_ref",
            )
    if plan.expires_at is not None and plan.expires_at <= now:
        raise invalid("expires_at", "expires_at must be in the future")

    resulting_revision = (current_revision or 0) + 1
    record = selectors.subject_record(
        key=plan.key,
        state="retired" if plan.kind == "retire" else "active",
        statement=plan.statement,
        revision=resulting_revision,
        operation_id=plan.operation_id,
        source_ref=plan.source_ref,
        expires_at=plan.expires_at,
        updated_at=now,
    )
    records = [r for r in subjects if r["key"] != plan.key] + [record]
    use = selectors.usage(records)
    if use["subjects"] > use["max_subjects"] or use["bytes"] > use["max_bytes"]:
        raise PreferenceError(
            "capacity_exceeded",
            "The current view would exceed its capacity; nothing was evicted.",
            details=use,
        )
    predecessor = existing["operation_id"] if existing is not None else None
    return record, records, predecessor, resulting_revision


def _receipt(plan: _Plan, status: str, revision: int, predecessor, view) -> dict[str, Any]:
    return {
        "schema_version": "semantic_preference_agent_receipt_v0",
        "status": status,
        "operation_id": plan.operation_id,
        "kind": plan.kind,
        "key": plan.key,
        "expected_revision": (
            None if plan.expected_revision is None else str(plan.expected_revision)
        ),
        "resulting_revision": str(revision),
        "predecessor_operation_id": predecessor,
        "view": view,
    }


def _lock_scope(scope_ref: ScopeRef, now: dt.datetime) -> tuple[PreferenceScope, bool]:
    """Lock (or create) the scope row; call inside ``transaction.atomic()``."""
    scope = (
        PreferenceScope.objects.select_for_update(of=("self",))
        .select_related("migrated_from")
        .filter(scope_key=scope_ref.scope_key)
        .first()
    )
    if scope is not None:
        return scope, False
    identity = scope_ref.identity
    scope = PreferenceScope.objects.create(
        scope_key=scope_ref.scope_key,
        runtime_id=identity["runtime_id"],
        goal=scope_ref.goal,
        agent=scope_ref.agent,
        goal_ref=identity["goal_id"],
        agent_ref=identity["agent_id"],
        state_ref=identity["state_ref"],
        instance_id=identity["instance_id"],
        created_at=now,
    )
    return scope, True


def _find_replay(plan: _Plan, scope_ref: ScopeRef, scope: PreferenceScope | None):
    """The replay (or ``operation_conflict``) for ``plan``'s operation id, if it was used."""
    if scope is None:
        return None
    op = PreferenceOperation.objects.filter(scope=scope, operation_id=plan.operation_id).first()
    return None if op is None else _replay_or_conflict(op, plan, scope_ref, scope)


def _write(plan: _Plan, *, execute: bool) -> dict[str, Any]:
    """Evaluate and (with ``execute``) commit one operation.

    The operation-id lookup runs only when a rule refuses the request: a request whose
    expected revision is current cannot be a replay (every commit advances the revision),
    and a reused id with other arguments then fails the (scope, operation id) constraint
    at insert, which is classified as ``operation_conflict``. The observable order of
    checks is therefore replay/conflict first, as the spec requires, at one query less.
    """
    scope_ref = selectors.resolve_scope(plan.goal_id, plan.agent_id)
    now = clock.now()
    if not execute:
        scope = selectors.get_scope(scope_ref)
        subjects = selectors.scope_records(scope)
        try:
            _, records, predecessor, revision = _evaluate(plan, scope_ref, scope, subjects, now)
        except PreferenceError:
            replay = _find_replay(plan, scope_ref, scope)
            if replay is not None:
                return replay
            raise
        view = selectors.build_view(scope_ref, revision, records, now)
        return _receipt(plan, "preview", revision, predecessor, view)

    try:
        with transaction.atomic():
            scope, created = _lock_scope(scope_ref, now)
            subjects = [] if created else selectors.scope_records(scope)
            try:
                record, records, predecessor, revision = _evaluate(
                    plan, scope_ref, scope, subjects, now
                )
            except PreferenceError:
                replay = None if created else _find_replay(plan, scope_ref, scope)
                if replay is not None:
                    return replay
                raise
            view = selectors.build_view(scope_ref, revision, records, now)
            receipt = _receipt(plan, "committed", revision, predecessor, view)
            _commit(scope, plan, record, subjects, predecessor, revision, receipt, now)
    except IntegrityError as exc:
        return _after_lost_race(plan, scope_ref, exc)
    return receipt


def _commit(scope, plan, record, subjects, predecessor, revision, receipt, now) -> None:
    """Persist one evaluated operation; caller holds the scope lock."""
    op = PreferenceOperation.objects.create(
        scope=scope,
        sequence=revision,
        operation_id=plan.operation_id,
        kind=plan.kind,
        key=plan.key,
        statement=plan.statement,
        source_ref=plan.source_ref,
        source_quote=plan.source_quote,
        expected_revision=plan.expected_revision,
        resulting_revision=revision,
        predecessor_operation_id=predecessor,
        expires_at=plan.expires_at,
        request_digest=plan.request_digest,
        receipt=_stored(receipt),
        created_at=now,
    )
    values = {
        "state": record["state"],
        "statement": plan.statement,
        "source_ref": plan.source_ref,
        "expires_at": plan.expires_at,
        "revision": revision,
        "operation": op,
        "updated_at": now,
    }
    if any(r["key"] == plan.key for r in subjects):
        PreferenceSubject.objects.filter(scope=scope, key=plan.key).update(**values)
    else:
        PreferenceSubject.objects.create(scope=scope, key=plan.key, **values)
    advanced = PreferenceScope.objects.filter(pk=scope.pk, revision=scope.revision).update(
        revision=revision, journal_started_at=scope.journal_started_at or now
    )
    if advanced != 1:  # impossible while the lock is held; the backstop says so loudly
        raise IntegrityError("scope revision moved under the lock")


def _after_lost_race(plan: _Plan, scope_ref: ScopeRef, exc: IntegrityError) -> dict[str, Any]:
    """Classify a commit refused by a unique constraint (the transaction rolled back):
    the operation id exists → replay or ``operation_conflict``; otherwise a concurrent
    writer took the revision → ``revision_conflict``."""
    scope = selectors.get_scope(scope_ref)
    replay = _find_replay(plan, scope_ref, scope)
    if replay is not None:
        return replay
    try:
        _revision_conflict(scope_ref, scope, plan.expected_revision)
    except PreferenceError as conflict:
        raise conflict from exc
    raise AssertionError("unreachable")  # pragma: no cover


# -- public services ---------------------------------------------------------------------
def remember(
    *,
    goal_id: str,
    agent_id: str,
    key: str,
    statement: str,
    source_ref: str,
    source_quote: str,
    expected_revision: Any,
    operation_id: str,
    expires_at: str | None = None,
    execute: bool = False,
) -> dict[str, Any]:
    """Remember (or correct) the owner's preference on ``key``.

    Returns ``semantic_preference_agent_receipt_v0`` with status ``preview`` (nothing
    written), ``committed`` or ``replayed``.
    """
    plan = _Plan(
        kind="remember",
        goal_id=goal_id,
        agent_id=agent_id,
        key=_key(key),
        statement=require_text(statement, "statement", max_length=1200, area=AREA),
        source_ref=require_text(source_ref, "source_ref", max_length=1024, area=AREA),
        source_quote=require_text(source_quote, "source_quote", max_length=1600, area=AREA),
        expected_revision=parse_expected_revision(expected_revision),
        operation_id=_operation_id(operation_id),
        expires_at=_expires_at(expires_at),
    )
    plan.args = {
        "kind": "remember",
        "goal_id": goal_id,
        "agent_id": agent_id,
        "key": plan.key,
        "statement": plan.statement,
        "source_ref": plan.source_ref,
        "source_quote": plan.source_quote,
        "expected_revision": plan.expected_revision,
        "operation_id": plan.operation_id,
        "expires_at": clock.iso(plan.expires_at),
    }
    return _write(plan, execute=execute)


def retire(
    *,
    goal_id: str,
    agent_id: str,
    key: str,
    source_ref: str,
    source_quote: str,
    expected_revision: Any,
    operation_id: str,
    execute: bool = False,
) -> dict[str, Any]:
    """Retire ``key``: a tombstone stays in the view; history keeps the old statement."""
    plan = _Plan(
        kind="retire",
        goal_id=goal_id,
        agent_id=agent_id,
        key=_key(key),
        statement=None,
        source_ref=require_text(source_ref, "source_ref", max_length=1024, area=AREA),
        source_quote=require_text(source_quote, "source_quote", max_length=1600, area=AREA),
        expected_revision=parse_expected_revision(expected_revision),
        operation_id=_operation_id(operation_id),
        expires_at=None,
    )
    plan.args = {
        "kind": "retire",
        "goal_id": goal_id,
        "agent_id": agent_id,
        "key": plan.key,
        "source_ref": plan.source_ref,
        "source_quote": plan.source_quote,
        "expected_revision": plan.expected_revision,
        "operation_id": plan.operation_id,
    }
    return _write(plan, execute=execute)


def migrate_scope(
    *,
    goal_id: str,
    agent_id: str,
    operation_id: str,
    from_state_ref: str | None = None,
    from_instance_id: str | None = None,
    execute: bool = False,
) -> dict[str, Any]:
    """Copy the current subjects of an earlier scope of this (Goal, Agent) — e.g. before
    the Goal's ``state_ref`` moved — into the current, empty scope, with lineage.

    Each copied subject becomes one ``migrate`` journal entry (operation id
    ``<operation_id>:<n>``) whose predecessor is the source subject's operation.
    Idempotent by ``operation_id``; the target scope must have no journal.
    """
    operation_id = _operation_id(operation_id, max_length=120)
    if from_state_ref is not None:
        require_text(from_state_ref, "from_state_ref", min_length=0, max_length=1024, area=AREA)
    scope_ref = selectors.resolve_scope(goal_id, agent_id)
    sources = PreferenceScope.objects.filter(
        runtime_id=scope_ref.identity["runtime_id"],
        goal_ref=goal_id,
        agent_ref=agent_id,
        revision__isnull=False,
    ).exclude(scope_key=scope_ref.scope_key)
    if from_state_ref is not None:
        sources = sources.filter(state_ref=from_state_ref)
    if from_instance_id is not None:
        sources = sources.filter(instance_id=from_instance_id)
    candidates = list(sources[:2])
    if not candidates:
        raise PreferenceError(
            "source_scope_not_found", "No earlier scope of this Goal/Agent to migrate from."
        )
    if len(candidates) > 1:
        raise PreferenceError(
            "source_scope_ambiguous",
            "Several earlier scopes exist; name one with --from-state-ref.",
            field="from_state_ref",
        )
    source = candidates[0]
    args = {
        "kind": "migrate",
        "goal_id": goal_id,
        "agent_id": agent_id,
        "source_scope": source.scope_key,
        "target_scope": scope_ref.scope_key,
        "operation_id": operation_id,
    }
    digest = sha256_hex(args)
    now = clock.now()

    def plan_rows(target_revision: int | None):
        if target_revision is not None:
            raise PreferenceError(
                "scope_not_empty",
                "The current scope already has a journal; migration would merge silently.",
                details={"current_revision": str(target_revision)},
            )
        rows = []
        for n, subject in enumerate(selectors.current_subjects(source), start=1):
            origin = PreferenceOperation.objects.get(pk=subject.operation_id)
            rows.append((n, subject, origin))
        return rows

    def payload(status: str, copied: list[str], revision: int | None, view) -> dict[str, Any]:
        return {
            "schema_version": "semantic_preference_agent_migration_v0",
            "status": status,
            "operation_id": operation_id,
            "from_scope_digest": "sha256:" + source.scope_key,
            "to_scope_digest": "sha256:" + scope_ref.scope_key,
            "copied_keys": copied,
            "resulting_revision": None if revision is None else str(revision),
            "view": view,
        }

    first_id = f"{operation_id}:1"
    if not execute:
        target = selectors.get_scope(scope_ref)
        existing = (
            PreferenceOperation.objects.filter(scope=target, operation_id=first_id).first()
            if target is not None
            else None
        )
        if existing is not None:
            return {
                **existing.receipt,
                "status": "replayed",
                "view": selectors.view_of(scope_ref, target),
                "original_receipt": existing.receipt,
            }
        rows = plan_rows(target.revision if target is not None else None)
        records = [_migrated_record(subject, n, operation_id, now) for n, subject, _ in rows]
        view = selectors.build_view(scope_ref, len(rows) or None, records, now)
        return payload("preview", [s.key for _, s, _ in rows], len(rows) or None, view)

    with transaction.atomic():
        target, _ = _lock_scope(scope_ref, now)
        existing = PreferenceOperation.objects.filter(scope=target, operation_id=first_id).first()
        if existing is not None:
            if existing.request_digest != digest:
                raise PreferenceError(
                    "operation_conflict",
                    "This operation id was already used with different arguments.",
                    field="operation_id",
                )
            return {
                **existing.receipt,
                "status": "replayed",
                "view": selectors.view_of(scope_ref, target),
                "original_receipt": existing.receipt,
            }
        rows = plan_rows(target.revision)
        if not rows:
            raise PreferenceError("source_scope_not_found", "The earlier scope holds no subjects.")
        records = [_migrated_record(subject, n, operation_id, now) for n, subject, _ in rows]
        view = selectors.build_view(scope_ref, len(rows), records, now)
        receipt = payload("committed", [s.key for _, s, _ in rows], len(rows), view)
        for n, subject, origin in rows:
            op = PreferenceOperation.objects.create(
                scope=target,
                sequence=n,
                operation_id=f"{operation_id}:{n}",
                kind="migrate",
                key=subject.key,
                statement=subject.statement,
                source_ref=origin.source_ref,
                source_quote=origin.source_quote,
                expected_revision=n - 1 or None,
                resulting_revision=n,
                predecessor_operation_id=origin.operation_id,
                expires_at=subject.expires_at,
                request_digest=digest,
                receipt=_stored(receipt),
                created_at=now,
            )
            PreferenceSubject.objects.create(
                scope=target,
                key=subject.key,
                state=subject.state,
                statement=subject.statement,
                source_ref=origin.source_ref,
                expires_at=subject.expires_at,
                revision=n,
                operation=op,
                updated_at=now,
            )
        PreferenceScope.objects.filter(pk=target.pk, revision__isnull=True).update(
            revision=len(rows), journal_started_at=now, migrated_from=source
        )
    return receipt


def _migrated_record(subject: PreferenceSubject, n: int, operation_id: str, now) -> dict:
    return selectors.subject_record(
        key=subject.key,
        state=subject.state,
        statement=subject.statement,
        revision=n,
        operation_id=f"{operation_id}:{n}",
        source_ref=subject.source_ref,
        expires_at=subject.expires_at,
        updated_at=now,
    )
