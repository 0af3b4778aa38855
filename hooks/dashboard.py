"""The hooks section of the operator dashboard (registered in ``HooksConfig.ready()``
into ``contributions.DASHBOARD_SECTIONS``): failed post-writeback hook dispatches per
Goal and failure code, linked to the filtered dispatch journal."""

from typing import Any

from django.db.models import Count, Max

from hooks.models import HookDispatch
from loopx_site.core.admin_dashboard import changelist
from loopx_site.core.contributions import DashboardRead
from loopx_site.core.dashboard_selectors import by_goal


def read() -> DashboardRead:
    """Per Goal: failed post-writeback hook dispatches by failure code (one query)."""
    rows = (
        HookDispatch.objects.filter(status="failed")
        .values("goal__goal_id", "failure_code")
        .annotate(count=Count("id"), last=Max("created_at"))
        .order_by("goal__goal_id", "failure_code")
    )
    grouped = by_goal(rows, "goal__goal_id")
    return DashboardRead(
        goals={gid: {"hook_failures": rows} for gid, rows in grouped.items()},
        empty={"hook_failures": []},
    )


def link(request, data: dict[str, Any]) -> None:
    """The failed dispatches (the changelist filters by status and failure code only)."""
    for goal in data["goals"]:
        goal["links"]["dispatches"] = changelist("hooks.hookdispatch", status__exact="failed")
        for row in goal["hook_failures"]:
            row["link"] = changelist(
                "hooks.hookdispatch", status__exact="failed", failure_code=row["failure_code"] or ""
            )
