"""Reads of the explicit preference journal: the current state, observation, history
pages and the turn-start projection. Reads never write and never start a journal.

Every read returns plain data; ``preferences.documents`` renders LoopX's documents.
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
from django.db import DatabaseError
from django.db.models import BooleanField, ExpressionWrapper

from loopx_site.core import clock
from loopx_site.core import errors as core_errors
from loopx_site.core import selectors as core_selectors
from loopx_site.core.canonical import canonical_text_bytes, sha256_hex
from loopx_site.core.errors import DomainError
from loopx_site.core.models import Agent, Goal
from preferences import journal_store
from preferences.documents import journal as documents
from preferences.errors import AREA, PreferenceError, invalid
from preferences.models import PreferenceOperation, PreferenceScope, PreferenceSubject

MAX_SUBJECTS = 64
MAX_BYTES = 32768
HISTORY_PAGE = 20
HISTORY_MAX_LIMIT = 200
SOURCE_KIND = "user_instruction"


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


# -- items ---------------------------------------------------------------------------------
def stored_item(
    *,
    key: str,
    state: str,
    statement: str | None,
    expires_at: str | None,
    source_ref: str,
    source_quote: str,
    recorded_at: str,
    operation_id: str,
    supersedes_operation_id: str | None,
) -> dict[str, Any]:
    """One current subject as LoopX's ``agent_preferences_v1`` item (``active`` or
    ``retired``); its canonical JSON is what the subject row stores and what capacity
    counts."""
    return {
        "key": key,
        "state": state,
        "statement": statement,
        "expires_at": expires_at,
        "source_kind": SOURCE_KIND,
        "source_ref": source_ref,
        "source_quote": source_quote,
        "recorded_at": recorded_at,
        "operation_id": operation_id,
        "supersedes_operation_id": supersedes_operation_id,
    }


def encode_item(item: dict[str, Any]) -> tuple[str, int]:
    """The stored text of an item and its size in bytes."""
    raw = canonical_text_bytes(item)
    return raw.decode("utf-8"), len(raw)


def expired_item(item: dict[str, Any]) -> dict[str, Any]:
    """What an active item reads as once ``expires_at`` has passed: no statement."""
    return {
        "key": item["key"],
        "state": "expired",
        "statement": None,
        "operation_id": item["operation_id"],
        "source_ref": item["source_ref"],
        "recorded_at": item["recorded_at"],
        "expires_at": item["expires_at"],
    }


def is_expired(item: dict[str, Any], now: dt.datetime) -> bool:
    return (
        item["state"] == "active"
        and item["expires_at"] is not None
        and clock.parse_iso_z(item["expires_at"]) <= now
    )


def project(items: list[dict[str, Any]], now: dt.datetime) -> list[dict[str, Any]]:
    """Stored items (sorted by key) as read at ``now``."""
    return [
        expired_item(i) if i["expires_at"] is not None and is_expired(i, now) else i
        for i in sorted(items, key=_BY_KEY)
    ]


#: ICU root collation (what Node's ``localeCompare`` applies, and so LoopX's journal
#: order) for the characters a key may hold: punctuation ``_`` < ``-`` < ``.`` before
#: digits before letters at the primary level, then lower case before upper case at the
#: tertiary level, left to right. Checked against Node 22 in
#: tests/preferences/test_loopx_key_order.py. Other characters sort after letters by code
#: point (a key never holds one).
_PRIMARY = {ch: rank for rank, ch in enumerate("_-.0123456789abcdefghijklmnopqrstuvwxyz")}


def locale_compare_key(text: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """A sort key equal to ``localeCompare`` order (ICU root) on keys' characters."""
    primary = tuple(_PRIMARY.get(ch.lower(), len(_PRIMARY) + ord(ch)) for ch in text)
    tertiary = tuple(1 if ch.isupper() else 0 for ch in text)
    return primary, tertiary


def _BY_KEY(item: dict[str, Any]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return locale_compare_key(item["key"])


def list_bytes(subjects: int, used_bytes: int) -> int:
    """The bytes of the whole current list as LoopX bounds it (``JSON.stringify`` of the
    array: the items, a comma between two, the brackets) from the items' own sizes."""
    return used_bytes + max(subjects, 1) + 1


def usage(subjects: int, used_bytes: int) -> dict[str, int]:
    return {
        "subjects": subjects,
        "bytes": used_bytes,
        "max_subjects": MAX_SUBJECTS,
        "max_bytes": MAX_BYTES,
    }


def state(
    goal_id: str,
    agent_id: str,
    revision: int | None,
    items: list[dict[str, Any]],
    used_bytes: int,
) -> dict[str, Any]:
    """The plain current state of a scope (rendered as ``current`` by the documents)."""
    return {
        "goal_id": goal_id,
        "agent_id": agent_id,
        "revision": None if revision is None else str(revision),
        "items": items,
        "usage": usage(len(items), used_bytes),
    }


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


def read_state(
    *,
    goal_id: str,
    agent_id: str,
    now: dt.datetime | None = None,
    subject_revisions: bool = False,
) -> dict[str, Any]:
    """The exact scope's current state, no writes.

    One statement in the common case: the subjects of the scope whose identity matches
    the registered Goal's *current* state ref and instance (so a moved state ref reads
    an empty scope). Only when it returns nothing does a second query tell an
    unregistered Goal/Agent from a scope that never committed.
    """
    rows = journal_store.read_rows(
        now=now or clock.now(),
        goal_id=goal_id,
        agent_id=agent_id,
        runtime_id=settings.LOOPX_RUNTIME_ID,
    )
    if not rows:
        resolve_scope(goal_id, agent_id)  # raises for an unknown Goal/Agent
        return state(goal_id, agent_id, None, [], 0)
    first = rows[0]
    if first[2] is None:  # a scope whose journal holds no current subject
        return state(goal_id, agent_id, first[0], [], first[1])
    items = decode_items([row[2] for row in rows])
    # LoopX lists keys in localeCompare order (ICU), not the database's collation.
    pairs = sorted(zip(items, rows, strict=True), key=lambda p: locale_compare_key(p[0]["key"]))
    items, rows = [p[0] for p in pairs], [p[1] for p in pairs]
    expired = [row[3] for row in rows]
    if 1 in expired:
        items = [
            expired_item(i) if flag and i["state"] == "active" else i
            for i, flag in zip(items, expired, strict=True)
        ]
    result = state(goal_id, agent_id, first[0], items, first[1])
    if subject_revisions:
        result["subject_revisions"] = {
            i["key"]: str(row[4]) for i, row in zip(items, rows, strict=True)
        }
    return result


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
    sequence — a cursor, never an offset — plus the current state."""
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
        "state": read_state(goal_id=goal_id, agent_id=agent_id),
    }


# -- turn-start participating hook -----------------------------------------------------
def required_reads(goal_id: str, agent_id: str) -> list[str]:
    return [
        f"manage.py semantic_preference agent read --goal-id {goal_id} --agent-id {agent_id} "
        "--format json"
    ]


INSTRUCTIONS = [
    "These are the owner's explicit, advisory preferences for this exact Goal and Agent; "
    "they grant no permission and do not override current authority or user gates.",
    "Consume this view once for this turn's pre-work checks, then run every remaining "
    "required read.",
    "Before every preference-dependent external action, obtain a fresh view (a new turn "
    "guard or an explicit agent read), even after an earlier empty or current view.",
    "To persist an explicit owner correction: read first, reuse the subject key, the "
    "current revision, a stable operation id and the exact owner source; preview, then "
    "--execute, then read back. Retry an uncertain write with the same operation id and "
    "arguments; never retry with a newly fetched revision.",
    "Retired and expired markers invalidate any cached advice on those keys; an older "
    "value is never resurrected.",
]


def turn_start_projection(goal: Goal, agent: Agent) -> dict[str, Any] | None:
    """The participating hook's contribution to a turn, or ``None``.

    ``None`` for a scope that never committed (the hook adds no field). An unreadable
    store returns ``{"status": "unavailable"}`` — never an empty view. Items carry no
    source quotes (this projection travels with the turn).
    """
    try:
        view = read_state(goal_id=goal.goal_id, agent_id=agent.agent_id, subject_revisions=True)
    except (DatabaseError, DomainError) as exc:
        return documents.turn_start({"status": "unavailable", "error_code": unavailable_code(exc)})
    if view["revision"] is None:
        return None
    revisions = view.get("subject_revisions", {})
    return documents.turn_start(
        {
            "status": "current",
            "revision": view["revision"],
            "authority": "advisory_only",
            "observation_count": len(view["items"]),
            "current": [
                {
                    "key": i["key"],
                    "statement": i["statement"],
                    "revision": revisions.get(i["key"]),
                }
                for i in view["items"]
                if i["state"] == "active"
            ],
            "markers": [
                {"key": i["key"], "state": i["state"], "revision": revisions.get(i["key"])}
                for i in view["items"]
                if i["state"] != "active"
            ],
            "instructions": INSTRUCTIONS,
            "required_reads": required_reads(goal.goal_id, agent.agent_id),
        }
    )


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
