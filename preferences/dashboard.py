"""The preferences section of the operator dashboard (registered in
``PreferencesConfig.ready()`` into ``contributions.DASHBOARD_SECTIONS``): each Goal's
preference scopes, live first, with links into the scope and journal changelists."""

from collections import defaultdict
from typing import Any

from django.db.models import BooleanField, ExpressionWrapper, Max
from django.urls import reverse

from loopx_site.core.admin_dashboard import changelist
from loopx_site.core.contributions import DashboardRead
from loopx_site.core.selectors import live_scope_q
from preferences.models import PreferenceScope


def read() -> DashboardRead:
    """Per Goal: each explicit preference scope, its revision and last journal change,
    with ``is_live`` — the scope the Goal points to now (this runtime, the Goal's
    current ``state_ref`` and ``instance_id``: ``selectors.live_scope_q``) — live
    scopes first (one query)."""
    live = ExpressionWrapper(live_scope_q(), output_field=BooleanField())
    rows = (
        PreferenceScope.objects.annotate(is_live=live)
        .values(
            "pk",
            "goal_ref",
            "agent_ref",
            "runtime_id",
            "state_ref",
            "instance_id",
            "revision",
            "is_live",
        )
        .annotate(last_change=Max("journal__created_at"))
        .order_by("goal_ref", "-is_live", "agent_ref", "-pk")
    )
    goals: dict[str, dict[str, list]] = defaultdict(lambda: {"scopes": [], "earlier_scopes": []})
    for row in rows:
        goals[row["goal_ref"]]["scopes" if row["is_live"] else "earlier_scopes"].append(row)
    return DashboardRead(goals=dict(goals), empty={"scopes": [], "earlier_scopes": []})


def link(request, data: dict[str, Any]) -> None:
    """The scope and journal changelists of each Goal, and each live scope's page."""
    for goal in data["goals"]:
        pk, gid = goal["pk"], goal["goal_id"]
        goal["links"]["scopes"] = changelist(
            "preferences.preferencescope",
            **({"goal__id__exact": pk} if pk is not None else {"q": gid}),
        )
        goal["links"]["journal"] = changelist(
            "preferences.preferenceoperation",
            **({"scope__goal__id__exact": pk} if pk is not None else {"q": gid}),
        )
        for scope in goal["scopes"]:
            scope["link"] = reverse("admin:preferences_preferencescope_change", args=[scope["pk"]])
