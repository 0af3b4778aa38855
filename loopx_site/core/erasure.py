"""Verified erasure of a Goal's (or one Agent's) memory (docs/security.md, "Erasure").

The kernel knows no app: each app that keeps content for a Goal registers an eraser on
``contributions.GOAL_CONTENT`` as ``eraser(*, goal, agent) -> {"removed": {table: rows},
"provider_deletes": {state: n}}`` (``agent`` is ``None`` for the whole Goal). An eraser
deletes or scrubs content and keeps only hashed tombstones (digests, revisions, operation
ids), so no replay or revision ever reuses what was erased.

``erase`` runs every eraser in one transaction under a lock on the Goal row; a preview runs
the same code and rolls it back, so its counts are exactly what ``--execute`` removes and
it writes nothing.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from loopx_site.core import access, clock, contributions
from loopx_site.core.errors import DomainError
from loopx_site.core.models import Agent, Goal


def _resolve(goal_id: str, agent_id: str | None) -> tuple[Goal, Agent | None]:
    goal = Goal.objects.select_for_update().filter(goal_id=goal_id).first()
    if goal is None:
        raise DomainError("resource_not_found", f"no Goal {goal_id!r}", field="goal_id")
    if agent_id is None:
        return goal, None
    agent = Agent.objects.filter(goal=goal, agent_id=agent_id).first()
    if agent is None:
        raise DomainError(
            "resource_not_found", f"no Agent {agent_id!r} in this Goal", field="agent_id"
        )
    return goal, agent


def _merge(total: dict[str, int], part: dict[str, int]) -> None:
    for name, count in part.items():
        total[name] = total.get(name, 0) + int(count)


def _run_erasers(goal: Goal, agent: Agent | None) -> dict[str, Any]:
    removed: dict[str, int] = {}
    provider_deletes: dict[str, int] = {}
    contributors = []
    for key, eraser in contributions.GOAL_CONTENT:
        result = eraser(goal=goal, agent=agent) or {}
        _merge(removed, result.get("removed", {}))
        _merge(provider_deletes, result.get("provider_deletes", {}))
        contributors.append(key)
    return {
        "removed": dict(sorted(removed.items())),
        "provider_deletes": dict(sorted(provider_deletes.items())),
        "contributors": contributors,
    }


#: The permission an admin account needs (the shell may always).
ERASE_PERMISSION = "core.erase_goal"


def erase(
    *,
    goal_id: str,
    agent_id: str | None = None,
    execute: bool = False,
    operator: access.Caller = access.SHELL,
) -> dict[str, Any]:
    """Erase the Goal's (or the Agent's) content everywhere; a preview rolls back.
    ``operator``: the admin's signed-in account, re-checked for ``core.erase_goal``."""
    access.require_operator_permission(operator, ERASE_PERMISSION)
    with transaction.atomic():
        goal, agent = _resolve(goal_id, agent_id)
        result = _run_erasers(goal, agent)
        if not execute:
            transaction.set_rollback(True)
    return {
        "status": "erased" if execute else "preview",
        "goal_id": goal_id,
        "agent_id": agent_id,
        "erased_at": clock.iso(clock.now()) if execute else None,
        **result,
    }
