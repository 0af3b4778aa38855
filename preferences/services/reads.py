"""Reads of the explicit journal with its rules applied: ``selectors`` read the stored
rows, ``preferences.domain.journal`` decides what they mean (LoopX's key order, expiry,
the turn-start projection), ``preferences.documents`` renders the result."""

import datetime as dt
from typing import Any

from django.db import DatabaseError

from loopx_site.core.errors import DomainError
from loopx_site.core.models import Agent, Goal
from preferences import selectors
from preferences.domain import journal as rules


def read(
    *,
    goal_id: str,
    agent_id: str,
    now: dt.datetime | None = None,
    subject_revisions: bool = False,
) -> dict[str, Any]:
    """The exact scope's current state (``documents.read``), no writes."""
    stored = selectors.current_rows(goal_id=goal_id, agent_id=agent_id, now=now)
    return rules.current_state(goal_id, agent_id, stored, subject_revisions=subject_revisions)


def history(
    *, goal_id: str, agent_id: str, after_cursor: str | None = None, limit: int | None = None
) -> dict[str, Any]:
    """One page of the journal (``selectors.history``) with the current state beside it
    (``documents.history``)."""
    page = selectors.history(
        goal_id=goal_id, agent_id=agent_id, after_cursor=after_cursor, limit=limit
    )
    return {**page, "state": read(goal_id=goal_id, agent_id=agent_id)}


def turn_start_projection(goal: Goal, agent: Agent) -> dict[str, Any] | None:
    """The participating hook's contribution to a turn (``documents.turn_start``), or
    ``None`` for a scope that never committed (the hook adds no field). An unreadable
    store is ``{"status": "unavailable", "error_code": …}`` — never an empty view."""
    try:
        view = read(goal_id=goal.goal_id, agent_id=agent.agent_id, subject_revisions=True)
    except (DatabaseError, DomainError) as exc:
        return {"status": "unavailable", "error_code": selectors.unavailable_code(exc)}
    return rules.turn_start_projection(goal.goal_id, agent.agent_id, view)
