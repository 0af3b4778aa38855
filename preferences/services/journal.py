"""Writes of the explicit Agent preference journal (spec Part A, LoopX's
``agent_preferences_v1`` lifecycle).

Order of checks for ``remember``/``retire``, identical for a preview and a commit:
argument validation → operation-id replay or ``operation_conflict`` (by the intent
hash) → revision check → rule checks (retire target, stale source, expiry in the
future) → capacity. A preview stops there and writes nothing; a commit writes the
journal entry, the subject and the scope's new revision in the same transaction.

Concurrency: the commit's first statement resolves the scope through the registry and
locks its row (``SELECT … FOR UPDATE OF`` on PostgreSQL; on SQLite the IMMEDIATE
transaction already holds the database write lock), returning in the same round trip
the operation id's earlier entry, if any, and every current subject's stored item. The
scope's revision advances by compare-and-swap and the unique constraints (scope,
operation id) / (scope, revision) are the backstop: an ``IntegrityError`` from a lost
race — e.g. two first writes creating the scope row — rolls the whole transaction back
and is reported as ``revision_conflict`` (or as a replay when the winner carried the
same operation), never as a 500 or a lost write. The transaction is
``journal_store.write_transaction`` (on SQLite in autocommit, the connection's own
``BEGIN IMMEDIATE``); the decoded current items are remembered per scope and reused only
for a byte-identical snapshot text (``preferences.journal_views``), so another process's
commit is a miss, never a stale view.

Services return plain data (``status``, ``proposed``, ``receipt``, ``state``) and raise
``PreferenceError``; a conflict carries the current state in ``err.state``.
``preferences.documents`` renders both.
"""

import bisect
import datetime as dt
import hashlib
import re
from dataclasses import dataclass
from typing import Any

import orjson
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max

from loopx_site.core import access, clock
from loopx_site.core.canonical import canonical_text_bytes, sha256_hex
from loopx_site.core.models import Goal
from loopx_site.core.validation import require_text
from preferences import journal_store, journal_views, selectors
from preferences.domain import journal as rules
from preferences.errors import AREA, PreferenceError, invalid
from preferences.models import PreferenceOperation, PreferenceScope, PreferenceSubject
from preferences.selectors import ScopeRef
from preferences.services import reads

# ``\Z``: a trailing newline is not part of a key (``$`` would accept one).
KEY_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*\Z")
#: An operation id is LoopX's opaque text (not blank, ≤ 128 UTF-16 code units: spaces,
#: ``/`` and non-ASCII pass, as in ``turn 44/retry``); ours also refuses control
#: characters, which would split a log line or a receipt (docs/loopx-hosts.md).
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
REVISION_RE = re.compile(r"[1-9][0-9]{0,9}")
#: The longest revision string taken as some store's revision (LoopX's own ``file:1:…``
#: revisions are far shorter); anything longer is malformed.
MAX_REVISION_CHARS = 256


# -- validation --------------------------------------------------------------------------
class ForeignRevision(str):
    """A well-formed revision string this journal never issued (e.g. LoopX's own
    ``file:1:…``, or another store's): it can never equal the current revision, so a
    write carrying it is a ``revision_conflict`` with ``current`` — the host's reread and
    reconcile path — never ``invalid_request``."""


def parse_expected_revision(value: Any) -> int | ForeignRevision | None:
    """``none``/``null`` → ``None``; the opaque revision string (``"3"``) → 3; any other
    printable string → a ``ForeignRevision`` (a conflict at the revision check).
    Malformed input (not a string, empty, surrounding whitespace, control characters,
    too long) is ``invalid_argument``."""
    if value is None or value == "none":
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    if isinstance(value, str):
        if REVISION_RE.fullmatch(value):
            return int(value)
        well_formed = value and value == value.strip() and len(value) <= MAX_REVISION_CHARS
        if well_formed and value.isprintable():
            return ForeignRevision(value)
    raise invalid("expected_revision", "expected_revision must be 'none' or a revision read back")


def _key(value: Any) -> str:
    return require_text(value, "key", max_length=128, pattern=KEY_RE, area=AREA)


def _operation_id(value: Any, *, max_length: int = 128) -> str:
    text = _text(value, "operation_id", max_length)
    if _CONTROL_RE.search(text):
        raise invalid("operation_id", "operation_id must not contain control characters")
    return text


#: LoopX's timestamp form: whole seconds or milliseconds, UTC ``Z`` (no microseconds).
EXPIRES_AT_RE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,3})?Z")


def _expires_at(value: Any) -> dt.datetime | None:
    if value is None:
        return None
    try:
        if not isinstance(value, str) or not EXPIRES_AT_RE.fullmatch(value):
            raise ValueError(value)
        return clock.parse_iso_z(value)
    except ValueError:
        raise invalid(
            "expires_at",
            "expires_at must be a UTC timestamp like 2026-12-01T00:00:00Z (at most "
            "millisecond precision)",
        ) from None


def _expires_text(value: dt.datetime | None) -> str | None:
    """An expiry as LoopX stores it (``toISOString``: always milliseconds, ``Z``)."""
    if value is None:
        return None
    return value.astimezone(dt.UTC).replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"


# -- planning ------------------------------------------------------------------------------
@dataclass(slots=True)
class _Plan:
    """One validated remember/retire request."""

    action: str
    goal_id: str
    agent_id: str
    key: str
    statement: str | None
    source_ref: str
    source_quote: str
    expected_revision: int | ForeignRevision | None
    operation_id: str
    expires_at: dt.datetime | None

    @property
    def expected(self) -> str | None:
        return None if self.expected_revision is None else str(self.expected_revision)

    @property
    def foreign(self) -> bool:
        return isinstance(self.expected_revision, ForeignRevision)

    def intent_hash(self, identity: dict[str, str]) -> str:
        """sha256 of the canonical intent; equal → replay, different → conflict."""
        return hashlib.sha256(
            canonical_text_bytes(
                {
                    "scope": identity,
                    "action": self.action,
                    "operation_id": self.operation_id,
                    "key": self.key,
                    "expected_revision": self.expected,
                    "source_ref": self.source_ref,
                    "source_quote": self.source_quote,
                    "statement": self.statement,
                    "expires_at": clock.iso(self.expires_at),
                }
            )
        ).hexdigest()


@dataclass(slots=True)
class _Snapshot:
    """The locked scope as one statement returned it."""

    scope_id: int | None
    revision: int | None
    used_bytes: int
    migrated_from_id: int | None
    identity: dict[str, str]
    prior: tuple[str, Any] | None  # (intent_hash, receipt) of the operation id
    previous: tuple[str, int] | None  # (stored item text, size) of the plan's key
    items: list[dict[str, Any]]  # every current subject's stored item, decoded once
    journal_revision: int | None
    # The highest revision any scope of this (runtime, Goal, Agent) reached — this one
    # included: a scope's next revision continues past it, so no revision of the
    # Goal/Agent is ever issued twice or goes backwards across ``state_ref`` moves.
    high_water: int | None = None
    # the remembered decode of ``items`` (``journal_views.decoded_view``)
    view: "journal_views.View | None" = None


def _snapshot(plan: _Plan, *, lock: bool = False, cursor=None) -> _Snapshot | None:
    """Resolve the scope (and, for a commit, lock it) in one statement: one row with the
    operation id's earlier entry, the plan key's subject and every current item."""
    rows = journal_store.snapshot_rows(
        operation_id=plan.operation_id,
        key=plan.key,
        goal_id=plan.goal_id,
        agent_id=plan.agent_id,
        runtime_id=settings.LOOPX_RUNTIME_ID,
        lock=lock,
        cursor=cursor,
    )
    if not rows:
        return None
    row = rows[0]
    prior = None
    if row[6] is not None:
        receipt = row[7]
        prior = (row[6], orjson.loads(receipt) if isinstance(receipt, str | bytes) else receipt)
    view, items = journal_views.decoded_view(row[0], row[11])
    return _Snapshot(
        scope_id=row[0],
        revision=row[1],
        used_bytes=row[2],
        migrated_from_id=row[3],
        identity={
            "runtime_id": settings.LOOPX_RUNTIME_ID,
            "state_ref": row[4],
            "instance_id": row[5],
            "goal_id": plan.goal_id,
            "agent_id": plan.agent_id,
        },
        prior=prior,
        previous=None if row[8] is None else (row[8], row[9]),
        items=items,
        journal_revision=row[10],
        high_water=row[12],
        view=view,
    )


def _empty_snapshot(scope_ref: ScopeRef) -> _Snapshot:
    return _Snapshot(
        scope_id=None,
        revision=None,
        used_bytes=0,
        migrated_from_id=None,
        identity=scope_ref.identity,
        prior=None,
        previous=None,
        items=[],
        journal_revision=None,
    )


def _current(plan: _Plan, snap: _Snapshot, items: list[dict] | None, now) -> dict[str, Any]:
    items = snap.items if items is None else items
    return rules.state(
        plan.goal_id,
        plan.agent_id,
        snap.revision,
        rules.project(items, now),
        snap.used_bytes,
    )


def _conflict(code: str, message: str, field: str, state: dict[str, Any], **details):
    err = PreferenceError(code, message, field=field, details=details)
    err.state = state
    return err


def _revision_conflict(plan: _Plan, snap: _Snapshot, now) -> PreferenceError:
    """``revision_conflict`` with the current state. A foreign revision is not echoed
    (it is the caller's opaque text); ``revision_origin`` says it was not ours."""
    return _conflict(
        "revision_conflict",
        "expected_revision is not the current revision; read, reconcile, then retry.",
        "expected_revision",
        _current(plan, snap, None, now),
        expected_revision=None if plan.foreign else plan.expected,
        current_revision=None if snap.revision is None else str(snap.revision),
        revision_origin="foreign" if plan.foreign else "journal",
    )


@dataclass(slots=True)
class _Evaluation:
    item: dict[str, Any]
    text: str
    size: int
    existing: bool
    used_bytes: int
    subject_count: int
    revision: int
    intent_hash: str


def _evaluate(plan: _Plan, snap: _Snapshot, now: dt.datetime):
    """Apply every rule to the snapshot: a replay (dict), or the evaluation of a new
    write, or raise the coded error. The same function serves preview and commit."""
    intent_hash = plan.intent_hash(snap.identity)
    if snap.prior is not None:
        prior_hash, receipt = snap.prior
        if prior_hash != intent_hash:
            raise _conflict(
                "operation_conflict",
                "This operation id was already used with different arguments.",
                "operation_id",
                _current(plan, snap, None, now),
                operation_id=plan.operation_id,
            )
        if isinstance(receipt, dict) and receipt.get("erased") is True:
            raise _conflict(
                "operation_conflict",
                "This operation id belongs to an erased entry; it is never applied again.",
                "operation_id",
                _current(plan, snap, None, now),
                operation_id=plan.operation_id,
            )
        return {"status": "replayed", "receipt": receipt, "intent_hash": intent_hash}

    if plan.foreign or plan.expected_revision != snap.revision:
        raise _revision_conflict(plan, snap, now)

    previous = orjson.loads(snap.previous[0]) if snap.previous is not None else None
    if plan.action == "retire":
        if previous is None:
            raise PreferenceError("not_found", f"No subject {plan.key!r} to retire.", field="key")
        if previous["state"] == "retired":
            raise PreferenceError(
                "already_retired", f"Subject {plan.key!r} is already retired.", field="key"
            )
    elif previous is not None and previous["state"] == "retired" and _source_used(snap, plan):
        raise PreferenceError(
            "stale_source",
            "Re-remembering a retired key needs a fresh explicit source.",
            field="source_ref",
        )
    if plan.expires_at is not None and plan.expires_at <= now:
        raise invalid("expires_at", "expires_at must be in the future")

    item = rules.stored_item(
        key=plan.key,
        state="retired" if plan.action == "retire" else "active",
        statement=plan.statement,
        expires_at=_expires_text(plan.expires_at),
        source_ref=plan.source_ref,
        source_quote=plan.source_quote,
        recorded_at=clock.iso(now),
        operation_id=plan.operation_id,
        supersedes_operation_id=previous["operation_id"] if previous else None,
    )
    text, size = rules.encode_item(item)
    count = len(snap.items) + (0 if previous is not None else 1)
    used = snap.used_bytes - (snap.previous[1] if snap.previous is not None else 0) + size
    if rules.over_capacity(count, used):
        raise PreferenceError(
            "capacity_exceeded",
            "The current view would exceed its capacity; nothing was evicted.",
            details=rules.usage(count, used),
        )
    return _Evaluation(
        item=item,
        text=text,
        size=size,
        existing=previous is not None,
        used_bytes=used,
        subject_count=count,
        revision=max(snap.revision or 0, snap.high_water or 0) + 1,
        intent_hash=intent_hash,
    )


def _source_used(snap: _Snapshot, plan: _Plan) -> bool:
    """Did this key's lineage (this scope and the scopes it was migrated from) ever use
    ``plan.source_ref``?"""
    ids, current, parent = [], snap.scope_id, snap.migrated_from_id
    while current is not None and current not in ids:
        ids.append(current)
        current = parent
        if current is not None:
            parent = (
                PreferenceScope.objects.filter(pk=current)
                .values_list("migrated_from_id", flat=True)
                .first()
            )
    return PreferenceOperation.objects.filter(
        scope_id__in=ids, key=plan.key, source_ref=plan.source_ref
    ).exists()


def _receipt(plan: _Plan, intent_hash: str, item: dict[str, Any]) -> dict[str, Any]:
    return {
        "operation_id": plan.operation_id,
        "intent_hash": intent_hash,
        "key": plan.key,
        "state": item["state"],
        "supersedes_operation_id": item["supersedes_operation_id"],
    }


def _replayed(plan: _Plan, snap: _Snapshot, replay: dict, now) -> dict[str, Any]:
    return {
        "status": "replayed",
        "receipt": replay["receipt"],
        "state": _current(plan, snap, None, now),
    }


def _after_items(snap: _Snapshot, ev: _Evaluation, now: dt.datetime) -> list[dict[str, Any]]:
    """The current view after the write, as read at ``now`` (``rules.project``)."""
    view, item, key = snap.view, ev.item, ev.item["key"]
    if view is not None and view.ordered and not view.expiring and item["expires_at"] is None:
        # Already in key order with nothing to expire: place the written item.
        keys, items = view.keys, snap.items
        at = bisect.bisect_left(keys, rules.locale_compare_key(key), key=rules.locale_compare_key)
        if at < len(keys) and keys[at] == key:
            items[at] = item
        else:
            items.insert(at, item)
        return items
    return rules.project([i for i in snap.items if i["key"] != key] + [item], now)


def _write(plan: _Plan, *, execute: bool) -> dict[str, Any]:
    now = clock.now()
    if not execute:
        snap = _snapshot(plan)
        if snap is None:
            snap = _empty_snapshot(selectors.resolve_scope(plan.goal_id, plan.agent_id))
        result = _evaluate(plan, snap, now)
        if isinstance(result, dict):
            return _replayed(plan, snap, result, now)
        return {
            "status": "preview",
            "proposed": result.item,
            "state": _current(plan, snap, None, now),
        }

    try:
        with journal_store.write_transaction() as tx:
            cursor = tx.cursor
            snap = _snapshot(plan, lock=True, cursor=cursor)
            if snap is None:
                snap = _create_scope(selectors.resolve_scope(plan.goal_id, plan.agent_id), now)
            elif snap.journal_revision != snap.revision:
                # PostgreSQL: the row lock waited for a concurrent commit, so the joined
                # rows are older than the locked row; read again under the lock.
                snap = _snapshot(plan, lock=True, cursor=cursor)
            try:
                result = _evaluate(plan, snap, now)
            except PreferenceError as err:
                if err.code != "revision_conflict":
                    raise
                # Decide a conflict on rows read while holding the lock (a same-operation
                # winner that committed while this writer waited is a replay).
                snap = _snapshot(plan, lock=True, cursor=cursor) or snap
                result = _evaluate(plan, snap, now)
            if isinstance(result, dict):
                return _replayed(plan, snap, result, now)
            receipt = _receipt(plan, result.intent_hash, result.item)
            _commit(cursor, plan, snap, result, receipt, now)
    except IntegrityError as exc:
        return _after_lost_race(plan, exc)
    journal_views.after_commit(
        snap.scope_id, snap.view, bool(snap.items), result.text, result.item["key"], result.existing
    )
    items = _after_items(snap, result, now)
    state = rules.state(plan.goal_id, plan.agent_id, result.revision, items, result.used_bytes)
    return {"status": "applied", "proposed": result.item, "receipt": receipt, "state": state}


def _create_scope(scope_ref: ScopeRef, now: dt.datetime) -> _Snapshot:
    """The first write of a scope creates its row (inside the commit's transaction; a
    concurrent first write fails on the unique scope key)."""
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
    snap = _empty_snapshot(scope_ref)
    snap.scope_id = scope.pk
    snap.high_water = high_water(scope_ref)
    return snap


def high_water(scope_ref: ScopeRef) -> int | None:
    """The highest revision any scope of this (runtime, Goal, Agent) reached: a new
    scope's first revision (its first write, or ``migrate-scope``) continues past it."""
    return (
        PreferenceScope.objects.filter(
            runtime_id=scope_ref.identity["runtime_id"], agent=scope_ref.agent
        )
        .aggregate(top=Max("revision"))
        .get("top")
    )


def _commit(cursor, plan: _Plan, snap: _Snapshot, ev: _Evaluation, receipt: dict, now) -> None:
    """Persist one evaluated operation; the caller holds the scope lock."""
    journal_store.commit(
        cursor,
        scope_id=snap.scope_id,
        expected_scope_revision=snap.revision,
        revision=ev.revision,
        action=plan.action,
        key=plan.key,
        statement=plan.statement,
        source_ref=plan.source_ref,
        source_quote=plan.source_quote,
        expected_revision=plan.expected_revision,
        predecessor_operation_id=ev.item["supersedes_operation_id"],
        operation_id=plan.operation_id,
        expires_at=plan.expires_at,
        state=ev.item["state"],
        item_text=ev.text,
        item_size=ev.size,
        existing=ev.existing,
        subject_count=ev.subject_count,
        used_bytes=ev.used_bytes,
        receipt=receipt,
        now=now,
    )


def _after_lost_race(plan: _Plan, exc: IntegrityError) -> dict[str, Any]:
    """Classify a commit refused by a unique constraint (the transaction rolled back):
    the operation id exists → replay or ``operation_conflict``; otherwise a concurrent
    writer took the revision → ``revision_conflict``."""
    now = clock.now()
    snap = _snapshot(plan)
    if snap is None:
        snap = _empty_snapshot(selectors.resolve_scope(plan.goal_id, plan.agent_id))
    try:
        result = _evaluate(plan, snap, now)
    except PreferenceError as err:
        raise err from exc
    if isinstance(result, dict):
        return _replayed(plan, snap, result, now)
    raise _revision_conflict(plan, snap, now) from exc


# -- public services ---------------------------------------------------------------------
def _text(value: Any, field: str, max_length: int) -> str:
    """LoopX's journal text: not blank, and at most ``max_length`` UTF-16 code units
    (JavaScript's ``length``: a character outside the BMP, e.g. an emoji, counts two)."""
    text = require_text(value, field, max_length=max_length, area=AREA)
    if not text.strip():
        raise invalid(field, f"{field} must not be blank")
    if not text.isascii() and len(text.encode("utf-16-le")) // 2 > max_length:
        raise invalid(field, f"{field} must be 1-{max_length} characters (UTF-16 code units)")
    return text


#: The model permission an operator account needs to write an Agent's preferences in the
#: admin (declared by its actions, re-checked here).
OPERATOR_PERMISSION = "preferences.change_preferencesubject"


def _check_operator(operator: "access.Caller | None") -> None:
    if operator is not None:
        access.require_operator_permission(operator, OPERATOR_PERMISSION, error=PreferenceError)


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
    operator: access.Caller | None = None,
) -> dict[str, Any]:
    """Remember (or correct) the owner's preference on ``key``. ``operator``: the admin's
    signed-in account, whose model permission is re-checked here (hosts and the shell
    pass none).

    Returns plain data: ``status`` ``preview`` (nothing written, ``proposed``),
    ``applied`` (``receipt``) or ``replayed`` (the original ``receipt``), and the
    current ``state``.
    """
    _check_operator(operator)
    plan = _Plan(
        action="remember",
        goal_id=goal_id,
        agent_id=agent_id,
        key=_key(key),
        statement=_text(statement, "statement", 1200),
        source_ref=_text(source_ref, "source_ref", 1024),
        source_quote=_text(source_quote, "source_quote", 1600),
        expected_revision=parse_expected_revision(expected_revision),
        operation_id=_operation_id(operation_id),
        expires_at=_expires_at(expires_at),
    )
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
    operator: access.Caller | None = None,
) -> dict[str, Any]:
    """Retire ``key``: a tombstone stays in the view; history keeps the old statement.
    ``operator`` as for ``remember``."""
    _check_operator(operator)
    plan = _Plan(
        action="retire",
        goal_id=goal_id,
        agent_id=agent_id,
        key=_key(key),
        statement=None,
        source_ref=_text(source_ref, "source_ref", 1024),
        source_quote=_text(source_quote, "source_quote", 1600),
        expected_revision=parse_expected_revision(expected_revision),
        operation_id=_operation_id(operation_id),
        expires_at=None,
    )
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
    source = _migration_source(scope_ref, goal_id, agent_id, from_state_ref, from_instance_id)
    digest = sha256_hex(
        {
            "action": "migrate",
            "scope": scope_ref.identity,
            "source_scope": source.scope_key,
            "operation_id": operation_id,
        }
    )
    migration = _Migration(goal_id, agent_id, operation_id, scope_ref, source, digest, clock.now())
    return _apply_migration(migration) if execute else _preview_migration(migration)


@dataclass(frozen=True)
class _Migration:
    """One ``migrate_scope`` call: what it copies, from where, under which intent."""

    goal_id: str
    agent_id: str
    operation_id: str
    scope_ref: ScopeRef
    source: PreferenceScope
    digest: str
    now: dt.datetime

    @property
    def first_id(self) -> str:
        return f"{self.operation_id}:1"


def _migration_source(
    scope_ref: ScopeRef,
    goal_id: str,
    agent_id: str,
    from_state_ref: str | None,
    from_instance_id: str | None,
) -> PreferenceScope:
    """The one earlier scope of this Goal/Agent (narrowed by the named state ref or
    instance) that holds a journal: none or several is an error."""
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
    return candidates[0]


def _migration_rows(m: _Migration, target_revision: int | None) -> list[tuple]:
    """``(n, subject, origin, item)`` per subject to copy; a target scope that already
    holds a journal refuses (a migration never merges)."""
    if target_revision is not None:
        raise PreferenceError(
            "scope_not_empty",
            "The current scope already has a journal; migration would merge silently.",
            details={"current_revision": str(target_revision)},
        )
    rows = []
    for n, subject in enumerate(selectors.current_subjects(m.source), start=1):
        origin = PreferenceOperation.objects.get(pk=subject.operation_id)
        item = rules.stored_item(
            key=subject.key,
            state=subject.state,
            statement=subject.statement,
            expires_at=clock.iso(subject.expires_at),
            source_ref=origin.source_ref,
            source_quote=origin.source_quote,
            recorded_at=clock.iso(m.now),
            operation_id=f"{m.operation_id}:{n}",
            supersedes_operation_id=origin.operation_id,
        )
        rows.append((n, subject, origin, item))
    return rows


def _migration_result(m: _Migration, status: str, rows, revision: int | None) -> dict[str, Any]:
    """``status``, the ``receipt`` (what an applied migration stores, as written) and
    the target scope's ``state`` after it."""
    items = rules.project([item for *_, item in rows], m.now)
    used = sum(rules.encode_item(item)[1] for *_, item in rows)
    receipt = {
        "operation_id": m.operation_id,
        "from_scope_digest": "sha256:" + m.source.scope_key,
        "to_scope_digest": "sha256:" + m.scope_ref.scope_key,
        "copied_keys": [item["key"] for *_, item in rows],
        "resulting_revision": None if revision is None else str(revision),
    }
    state = rules.state(m.goal_id, m.agent_id, revision, items, used)
    return {"status": status, "receipt": receipt, "state": state}


def _migration_replay(m: _Migration, existing: PreferenceOperation) -> dict[str, Any]:
    """The same operation id again: its stored receipt (``replayed``), or
    ``operation_conflict`` when the arguments differ."""
    if existing.intent_hash != m.digest:
        err = PreferenceError(
            "operation_conflict",
            "This operation id was already used with different arguments.",
            field="operation_id",
        )
        err.state = reads.read(goal_id=m.goal_id, agent_id=m.agent_id)
        raise err
    return {
        "status": "replayed",
        "receipt": existing.receipt,
        "state": reads.read(goal_id=m.goal_id, agent_id=m.agent_id),
    }


def _preview_migration(m: _Migration) -> dict[str, Any]:
    target = selectors.get_scope(m.scope_ref)
    existing = (
        PreferenceOperation.objects.filter(scope=target, operation_id=m.first_id).first()
        if target is not None
        else None
    )
    if existing is not None:
        return _migration_replay(m, existing)
    rows = _migration_rows(m, target.revision if target is not None else None)
    base = high_water(m.scope_ref) or 0
    return _migration_result(m, "preview", rows, base + len(rows) if rows else None)


def _apply_migration(m: _Migration) -> dict[str, Any]:
    with transaction.atomic():
        # The Goal row first (as ``goal register`` locks it): no ``state_ref`` move and no
        # write of another scope of this Agent interleaves with the migration.
        Goal.objects.select_for_update().filter(pk=m.scope_ref.goal.pk).exists()
        target = (
            PreferenceScope.objects.select_for_update(of=("self",))
            .filter(scope_key=m.scope_ref.scope_key)
            .first()
        )
        if target is None:
            target = PreferenceScope.objects.get(pk=_create_scope(m.scope_ref, m.now).scope_id)
        existing = PreferenceOperation.objects.filter(scope=target, operation_id=m.first_id).first()
        if existing is not None:
            return _migration_replay(m, existing)
        rows = _migration_rows(m, target.revision)
        if not rows:
            raise PreferenceError("source_scope_not_found", "The earlier scope holds no subjects.")
        # The copied entries continue the Goal/Agent's revision sequence past every
        # earlier scope: a revision read in the source scope is never current here.
        base = high_water(m.scope_ref) or 0
        result = _migration_result(m, "applied", rows, base + len(rows))
        _write_migrated_rows(m, target, rows, base, result["receipt"])
    return result


def _write_migrated_rows(m: _Migration, target: PreferenceScope, rows, base: int, stored) -> None:
    """One ``migrate`` journal entry and one subject per copied row, then the target
    scope's revision, counts and lineage."""
    used = 0
    for n, subject, origin, item in rows:
        op = PreferenceOperation.objects.create(
            scope=target,
            sequence=n,  # the target scope is empty: its journal starts at 1
            operation_id=item["operation_id"],
            kind="migrate",
            key=subject.key,
            statement=subject.statement,
            source_ref=origin.source_ref,
            source_quote=origin.source_quote,
            expected_revision=None if n == 1 else base + n - 1,
            resulting_revision=base + n,
            predecessor_operation_id=origin.operation_id,
            expires_at=subject.expires_at,
            intent_hash=m.digest,
            receipt=stored,
            created_at=m.now,
        )
        text, size = rules.encode_item(item)
        used += size
        PreferenceSubject.objects.create(
            scope=target,
            key=subject.key,
            state=subject.state,
            statement=subject.statement,
            source_ref=origin.source_ref,
            expires_at=subject.expires_at,
            revision=base + n,
            operation=op,
            updated_at=m.now,
            item=text,
            size=size,
        )
    PreferenceScope.objects.filter(pk=target.pk, revision__isnull=True).update(
        revision=base + len(rows),
        journal_started_at=m.now,
        migrated_from=m.source,
        subject_count=len(rows),
        used_bytes=used,
    )
