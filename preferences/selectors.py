"""Reads of the explicit preference journal: the current subjects, observation and
history pages. Reads never write and never start a journal, and apply no rule: the
services apply ``preferences.domain`` to what they return (``services.read``), and
``preferences.documents`` renders LoopX's documents.
The hot read is one SQL statement (scope resolved through the registry, subjects
joined, expiry decided by the database) whose rows carry each subject's stored wire
item: no ORM instances, no timestamp formatting, no size computation per read.
"""

import base64
import binascii
import datetime as dt
from dataclasses import dataclass
from typing import Any

import orjson
from django.conf import settings
from django.db.models import BooleanField, ExpressionWrapper

from loopx_site.core import clock
from loopx_site.core import errors as core_errors
from loopx_site.core import selectors as core_selectors
from loopx_site.core.canonical import sha256_hex
from loopx_site.core.errors import DomainError
from loopx_site.core.models import Agent, Goal
from preferences import journal_store
from preferences.domain.journal import StoredView, stored_item
from preferences.errors import AREA, PreferenceError, invalid
from preferences.models import PreferenceOperation, PreferenceScope, PreferenceSubject

HISTORY_PAGE = 20
HISTORY_MAX_LIMIT = 200


@dataclass(frozen=True)
class ScopeRef:
    """The exact scope of one (Goal, Agent) in this runtime, resolved from the registry."""

    goal: Goal
    agent: Agent
    identity: dict[str, str]
    scope_key: str


def scope_identity(goal: Goal, agent: Agent) -> ScopeRef:
    identity = {
        "runtime_id": settings.LOOPX_RUNTIME_ID,
        "state_ref": goal.state_ref,
        "instance_id": goal.instance_id,
        "goal_id": goal.goal_id,
        "agent_id": agent.agent_id,
    }
    return ScopeRef(goal=goal, agent=agent, identity=identity, scope_key=sha256_hex(identity))


def resolve_scope(goal_id: str, agent_id: str) -> ScopeRef:
    """The registered Goal/Agent's scope (one query), or a coded error saying the Goal
    and Agent must be registered."""
    try:
        agent = core_selectors.get_agent(goal_id, agent_id, area=AREA)
    except DomainError as exc:
        if exc.code == "agent_not_registered":
            raise PreferenceError(
                "agent_not_registered",
                f"Agent {agent_id!r} must be registered in Goal {goal_id!r} before its "
                "preferences can be read or written.",
                field="agent_id",
            ) from None
        if exc.code == "goal_not_registered":
            raise PreferenceError(
                "goal_not_registered",
                f"Goal {goal_id!r} must be registered before its Agents' preferences can "
                "be read or written.",
                field="goal_id",
            ) from None
        raise
    return scope_identity(agent.goal, agent)


def get_scope(scope_ref: ScopeRef) -> PreferenceScope | None:
    return PreferenceScope.objects.filter(scope_key=scope_ref.scope_key).first()


def current_subjects(scope: PreferenceScope | None) -> list[PreferenceSubject]:
    if scope is None:
        return []
    return list(PreferenceSubject.objects.filter(scope=scope).order_by("key"))


def decode_items(texts: list[str]) -> list[dict[str, Any]]:
    """Stored item texts → items (one parse); a row that does not decode makes the store
    unreadable (``unavailable``), never an empty or partial view."""
    try:
        return orjson.loads("[" + ",".join(texts) + "]")
    except orjson.JSONDecodeError:
        raise unreadable() from None


#: The turn-start hook's codes for a store it could not read (LoopX's names): a refused
#: read (the database denied this role access) is not the same as a broken store.
PERMISSION_DENIED = "agent_preferences_permission_denied"
UNREADABLE = "agent_preferences_unreadable"


def unavailable_code(exc: BaseException) -> str:
    """``PERMISSION_DENIED`` when the database refused access (SQLSTATE 42501 or its
    message), ``UNREADABLE`` for every other failure to read the store."""
    return PERMISSION_DENIED if core_errors.is_permission_denied(exc) else UNREADABLE


def unreadable() -> PreferenceError:
    return PreferenceError(
        "store_unavailable",
        "The preference store cannot be read; nothing was assumed about its contents.",
    )


def current_rows(*, goal_id: str, agent_id: str, now: dt.datetime | None = None) -> StoredView:
    """The exact scope's current subjects as stored, no writes and no rule applied
    (``preferences.services.read`` applies them).

    One statement in the common case: the subjects of the scope whose identity matches
    the registered Goal's *current* state ref and instance (so a moved state ref reads
    an empty scope), with whether the database finds each expired at ``now``. Only when
    it returns nothing does a second query tell an unregistered Goal/Agent from a scope
    that never committed.
    """
    rows = journal_store.read_rows(
        now=now or clock.now(),
        goal_id=goal_id,
        agent_id=agent_id,
        runtime_id=settings.LOOPX_RUNTIME_ID,
    )
    if not rows:
        resolve_scope(goal_id, agent_id)  # raises for an unknown Goal/Agent
        return StoredView(None, 0, [], [], [])
    first = rows[0]
    if first[2] is None:  # a scope whose journal holds no current subject
        return StoredView(first[0], first[1], [], [], [])
    items = decode_items([row[2] for row in rows])
    return StoredView(first[0], first[1], items, [row[3] for row in rows], [row[4] for row in rows])


def observe(*, goal_id: str, agent_id: str) -> dict[str, Any]:
    """Content-free observation (LoopX's ``observe``): does this exact scope hold a
    journal, and how many current subjects (retired and expired included)."""
    scope_ref = resolve_scope(goal_id, agent_id)
    row = (
        PreferenceScope.objects.filter(scope_key=scope_ref.scope_key, revision__isnull=False)
        .values_list("subject_count", flat=True)
        .first()
    )
    return {
        "goal_id": goal_id,
        "agent_id": agent_id,
        "observed": row is not None,
        "count": row or 0,
    }


# -- history ---------------------------------------------------------------------------
def _encode_cursor(scope_key: str, sequence: int) -> str:
    raw = f"{scope_key[:16]}:{sequence}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(scope_key: str, cursor: str) -> int:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        prefix, _, sequence = base64.urlsafe_b64decode(padded.encode()).decode().partition(":")
        value = int(sequence)
    except (binascii.Error, UnicodeError, ValueError):
        raise _unreadable_from() from None
    if prefix != scope_key[:16] or value < 0:
        raise _unreadable_from()
    return value


def _unreadable_from() -> PreferenceError:
    """A cursor this history never issued: LoopX answers ``unavailable`` (no page can be
    read from it), not a validation error."""
    return PreferenceError(
        "cursor_unavailable",
        "No history page can be read from this `after_cursor`; page again from the start.",
        field="after_cursor",
    )


_EVENT_FIELDS = (
    "sequence",
    "kind",
    "key",
    "statement",
    "expires_at",
    "source_ref",
    "source_quote",
    "created_at",
    "operation_id",
    "predecessor_operation_id",
    "resulting_revision",
)


def history_event(row: dict[str, Any]) -> dict[str, Any]:
    """One journal entry (``documents.event`` renders it as ``agent_preference_changed_v1``):
    the row it wrote, plus our ``sequence``, ``kind`` and ``revision``."""
    state_ = "active" if row["statement"] is not None else "retired"
    return {
        **stored_item(
            key=row["key"],
            state=state_,
            statement=row["statement"],
            expires_at=clock.iso(row["expires_at"]),
            source_ref=row["source_ref"],
            source_quote=row["source_quote"],
            recorded_at=clock.iso(row["created_at"]),
            operation_id=row["operation_id"],
            supersedes_operation_id=row["predecessor_operation_id"],
        ),
        "sequence": row["sequence"],
        "kind": row["kind"],
        "revision": str(row["resulting_revision"]),
    }


def history(
    *, goal_id: str, agent_id: str, after_cursor: str | None = None, limit: int | None = None
) -> dict[str, Any]:
    """Oldest-first pages of the journal (``HISTORY_PAGE`` events by default), keyed by
    sequence — a cursor, never an offset (``services.history`` adds the current state)."""
    if limit is None:
        limit = HISTORY_PAGE
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= HISTORY_MAX_LIMIT:
        raise invalid("limit", f"limit must be 1-{HISTORY_MAX_LIMIT}")
    scope_ref = resolve_scope(goal_id, agent_id)
    after = _decode_cursor(scope_ref.scope_key, after_cursor) if after_cursor else 0
    scope_id = (
        PreferenceScope.objects.filter(scope_key=scope_ref.scope_key)
        .values_list("pk", flat=True)
        .first()
    )
    rows = (
        []
        if scope_id is None
        else list(
            # (scope, sequence) is unique and indexed: the page is an index range scan
            # at any depth; sequences run 1, 2, 3… without gaps per scope.
            PreferenceOperation.objects.filter(scope_id=scope_id, sequence__gt=after)
            .order_by("sequence")
            .values(*_EVENT_FIELDS)[: limit + 1]
        )
    )
    more = len(rows) > limit
    rows = rows[:limit]
    return {
        "goal_id": goal_id,
        "agent_id": agent_id,
        "events": [history_event(r) for r in rows],
        "has_more": more,
        # LoopX keeps the cursor at the end: a page from it is empty and answers the same
        # cursor, so a host tailing the journal resumes from where it stopped.
        "next_cursor": (
            _encode_cursor(scope_ref.scope_key, rows[-1]["sequence"]) if rows else after_cursor
        ),
    }


# -- live and earlier scopes ---------------------------------------------------------------
def with_live_marker(queryset, prefix: str = ""):
    """``queryset`` annotated with ``is_live``: whether the scope (reached through
    ``prefix``, e.g. ``"scope__"`` from a subject) is the one its Goal points to now
    (``core_selectors.live_scope_q``)."""
    return queryset.annotate(
        is_live=ExpressionWrapper(core_selectors.live_scope_q(prefix), output_field=BooleanField())
    )


def subject_operations(subject: PreferenceSubject) -> list[PreferenceOperation]:
    """Every journal operation on ``subject``'s key in its scope, oldest first (the
    admin's readable history of one preference)."""
    return list(
        PreferenceOperation.objects.filter(scope_id=subject.scope_id, key=subject.key).order_by(
            "sequence"
        )
    )
