"""Read-only queries of the operator dashboard (``/admin/dashboard/``).

The kernel reads its own Goals and Agents; every other section is an app's
``contributions.DASHBOARD_SECTIONS`` entry (registered in its ``AppConfig.ready()``), so
the kernel names no app and looks no model up by label. One query per panel, grouped per
Goal in Python. Only identifiers, counts, codes, states and timestamps leave here: no
statement, summary, title, quote or provider detail.
"""

from collections import defaultdict
from typing import Any

from loopx_site.core import contributions
from loopx_site.core.models import Agent


def by_goal(rows, key="goal_id") -> dict[str, list[dict[str, Any]]]:
    """``rows`` grouped by their Goal id (``key``), in order."""
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        grouped[row[key]].append(row)
    return grouped


def goals_with_agents() -> list[dict[str, Any]]:
    """Goals and their Agents (one query)."""
    rows = Agent.objects.values("goal_id", "goal__goal_id", "agent_id").order_by(
        "goal__goal_id", "agent_id"
    )
    goals: dict[str, dict[str, Any]] = {}
    for row in rows:
        goal = goals.setdefault(
            row["goal__goal_id"], {"pk": row["goal_id"], "goal_id": row["goal__goal_id"]}
        )
        goal.setdefault("agents", []).append(row["agent_id"])
    return list(goals.values())


def view_permissions() -> tuple[str, ...]:
    """Every view permission the dashboard's counts need: the kernel's and each
    section's."""
    needed = ["core.view_agent"]
    for _key, section in contributions.DASHBOARD_SECTIONS:
        needed += [p for p in section.permissions if p not in needed]
    return tuple(needed)


def dashboard() -> dict[str, Any]:
    """The whole dashboard: the Goals and Agents, then each registered section's reads,
    merged into per-Goal parts and page keys."""
    goals = goals_with_agents()
    reads = [section() for _key, section in contributions.DASHBOARD_SECTIONS]
    known = {g["goal_id"] for g in goals}
    # Goals registered without Agents still get a part (no extra query: their rows in
    # the sections name them).
    named = set().union(*(read.goals for read in reads))
    for goal_id in sorted(named - known):
        goals.append({"pk": None, "goal_id": goal_id, "agents": []})
    page: dict[str, Any] = {}
    for read in reads:
        page.update(read.page)
        for goal in goals:
            goal.update(read.goals.get(goal["goal_id"], read.empty))
            if read.for_goal is not None:
                goal.update(read.for_goal(goal["goal_id"]))
    return {"goals": goals, **page}
