"""Reads of the explicit preference journal: the current view, history pages and the
turn-start projection. Reads never write and never start a journal."""

import base64
import binascii
import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import DatabaseError
from django.db.models import F

from loopx_site.core import clock
from loopx_site.core import selectors as core_selectors
from loopx_site.core.canonical import canonical_size, sha256_hex
from loopx_site.core.models import Agent, Goal
from preferences.errors import AREA, PreferenceError, invalid
from preferences.models import PreferenceOperation, PreferenceScope, PreferenceSubject

MAX_SUBJECTS = 64
MAX_BYTES = 32768
HISTORY_DEFAULT_LIMIT = 50
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
    """The registered Goal/Agent's scope (one query), or a 404-style error."""
    agent = core_selectors.get_agent(goal_id, agent_id, area=AREA)
    return scope_identity(agent.goal, agent)


def get_scope(scope_ref: ScopeRef) -> PreferenceScope | None:
    return PreferenceScope.objects.filter(scope_key=scope_ref.scope_key).first()


def current_subjects(scope: PreferenceScope | None) -> list[PreferenceSubject]:
    if scope is None:
        return []
    return list(
        PreferenceSubject.objects.filter(scope=scope)
        .select_related("operation")
        .only(
            "key",
            "state",
            "statement",
            "source_ref",
            "expires_at",
            "revision",
            "updated_at",
            "operation__operation_id",
        )
        .order_by("key")
    )


# -- view ------------------------------------------------------------------------------
def subject_record(
    *,
    key: str,
    state: str,
    statement: str | None,
    revision: int,
    operation_id: str,
    source_ref: str,
    expires_at: dt.datetime | None,
    updated_at: dt.datetime,
) -> dict[str, Any]:
    """The stored form of one current subject; capacity counts its canonical bytes."""
    return {
        "key": key,
        "state": state,
        "statement": statement,
        "revision": str(revision),
        "operation_id": operation_id,
        "source_ref": source_ref,
        "expires_at": clock.iso(expires_at),
        "updated_at": clock.iso(updated_at),
    }


def view_item(record: dict[str, Any], now: dt.datetime) -> dict[str, Any]:
    """A record as clients see it: ``expired`` once ``expires_at`` has passed."""
    state = record["state"]
    if (
        state == "active"
        and record["expires_at"]
        and clock.parse_iso_z(record["expires_at"]) <= now
    ):
        state = "expired"
    return {
        "key": record["key"],
        "state": state,
        "actionable": state == "active",
        "statement": record["statement"],
        "revision": record["revision"],
        "operation_id": record["operation_id"],
        "source_ref": record["source_ref"],
        "expires_at": record["expires_at"],
        "updated_at": record["updated_at"],
    }


def usage(records: list[dict[str, Any]]) -> dict[str, int]:
    return {
        "subjects": len(records),
        "bytes": sum(canonical_size(r) for r in records),
        "max_subjects": MAX_SUBJECTS,
        "max_bytes": MAX_BYTES,
    }


def build_view(
    scope_ref: ScopeRef, revision: int | None, records: list[dict[str, Any]], now: dt.datetime
) -> dict[str, Any]:
    """``semantic_preference_agent_view_v0`` from records (keys sorted)."""
    records = sorted(records, key=lambda r: r["key"])
    return _view(scope_ref.goal.goal_id, scope_ref.agent.agent_id, revision, records, now)


def _view(
    goal_id: str,
    agent_id: str,
    revision: int | None,
    records: list[dict[str, Any]],
    now: dt.datetime,
) -> dict[str, Any]:
    return {
        "schema_version": "semantic_preference_agent_view_v0",
        "goal_id": goal_id,
        "agent_id": agent_id,
        "participating": revision is not None,
        "revision": None if revision is None else str(revision),
        "authority": "advisory_only",
        "current": [view_item(r, now) for r in records],
        "usage": usage(records),
    }


def view_of(scope_ref: ScopeRef, scope: PreferenceScope | None) -> dict[str, Any]:
    revision = scope.revision if scope is not None else None
    return build_view(scope_ref, revision, scope_records(scope), clock.now())


_RECORD_FIELDS = (
    "key",
    "state",
    "statement",
    "revision",
    "operation__operation_id",
    "source_ref",
    "expires_at",
    "updated_at",
)


_RECORD_KEYS = tuple(f.removeprefix("operation__") for f in _RECORD_FIELDS)


def _records(rows) -> list[dict[str, Any]]:
    """Stored records from ``values_list(*_RECORD_FIELDS)`` rows."""
    return [subject_record(**dict(zip(_RECORD_KEYS, row, strict=True))) for row in rows]


def scope_records(scope: PreferenceScope | None) -> list[dict[str, Any]]:
    """The stored records of a scope's current subjects (one query, no model instances)."""
    if scope is None:
        return []
    return _records(
        PreferenceSubject.objects.filter(scope=scope).order_by("key").values_list(*_RECORD_FIELDS)
    )


def read_view(*, goal_id: str, agent_id: str) -> dict[str, Any]:
    """The exact scope's current view, no writes.

    One query in the common case: the subjects of the scope whose identity matches the
    registered Goal's *current* state ref and instance (so a moved state ref reads an
    empty scope). Only when it returns nothing does a second query tell an unregistered
    Goal/Agent (404) from a scope that never committed.
    """
    rows = list(
        PreferenceSubject.objects.filter(
            scope__goal__goal_id=goal_id,
            scope__agent__agent_id=agent_id,
            scope__runtime_id=settings.LOOPX_RUNTIME_ID,
            scope__state_ref=F("scope__goal__state_ref"),
            scope__instance_id=F("scope__goal__instance_id"),
        )
        .order_by("key")
        .values_list("scope__revision", *_RECORD_FIELDS)
    )
    if not rows:
        scope_ref = resolve_scope(goal_id, agent_id)  # raises for an unknown Goal/Agent
        return build_view(scope_ref, None, [], clock.now())
    records = _records(row[1:] for row in rows)
    return _view(goal_id, agent_id, rows[0][0], records, clock.now())


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
        raise invalid("after_cursor", "after_cursor is not a cursor of this history") from None
    if prefix != scope_key[:16] or value < 0:
        raise invalid("after_cursor", "after_cursor is not a cursor of this history")
    return value


def history_entry(op: PreferenceOperation) -> dict[str, Any]:
    return {
        "sequence": op.sequence,
        "operation_id": op.operation_id,
        "kind": op.kind,
        "key": op.key,
        "statement": op.statement,
        "source_ref": op.source_ref,
        "source_quote": op.source_quote,
        "predecessor_operation_id": op.predecessor_operation_id,
        "resulting_revision": str(op.resulting_revision),
        "expires_at": clock.iso(op.expires_at),
        "created_at": clock.iso(op.created_at),
    }


def history(
    *, goal_id: str, agent_id: str, after_cursor: str | None = None, limit: int | None = None
) -> dict[str, Any]:
    """Newest-last pages of the journal, keyed by sequence (a cursor, never an offset)."""
    if limit is None:
        limit = HISTORY_DEFAULT_LIMIT
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= HISTORY_MAX_LIMIT:
        raise invalid("limit", f"limit must be 1-{HISTORY_MAX_LIMIT}")
    scope_ref = resolve_scope(goal_id, agent_id)
    after = _decode_cursor(scope_ref.scope_key, after_cursor) if after_cursor else 0
    # The scope row first, so the page is one range scan of the (scope, sequence) index.
    scope = get_scope(scope_ref)
    ops = (
        []
        if scope is None
        else list(
            PreferenceOperation.objects.filter(scope=scope, sequence__gt=after)
            .defer("receipt", "request_digest")
            .order_by("sequence")[: limit + 1]
        )
    )
    more = len(ops) > limit
    ops = ops[:limit]
    return {
        "schema_version": "semantic_preference_agent_history_v0",
        "goal_id": goal_id,
        "agent_id": agent_id,
        "entries": [history_entry(op) for op in ops],
        "next_cursor": _encode_cursor(scope_ref.scope_key, ops[-1].sequence) if more else None,
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
    store returns ``{"status": "unavailable"}`` — never an empty view.
    """
    try:
        scope_ref = scope_identity(goal, agent)
        scope = get_scope(scope_ref)
        if scope is None or scope.revision is None:
            return None
        view = view_of(scope_ref, scope)
    except DatabaseError:
        return {"schema_version": "semantic_preference_turn_start_v0", "status": "unavailable"}
    except PreferenceError:
        return {"schema_version": "semantic_preference_turn_start_v0", "status": "unavailable"}
    return {
        "schema_version": "semantic_preference_turn_start_v0",
        "status": "current",
        "revision": view["revision"],
        "authority": "advisory_only",
        "current": [
            {"key": i["key"], "statement": i["statement"], "revision": i["revision"]}
            for i in view["current"]
            if i["actionable"]
        ],
        "markers": [
            {"key": i["key"], "state": i["state"], "revision": i["revision"]}
            for i in view["current"]
            if not i["actionable"]
        ],
        "instructions": INSTRUCTIONS,
        "required_reads": required_reads(goal.goal_id, agent.agent_id),
    }
