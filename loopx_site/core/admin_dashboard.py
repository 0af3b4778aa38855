"""The operator dashboard: one read-only admin page, linked from the admin index.

A thin adapter: ``dashboard_selectors.dashboard()`` does the reading (one query per
panel); this view adds the admin context and asks each app's registered section
(``contributions.DASHBOARD_SECTIONS``) to add its links into filtered changelists, and
each registered panel (``contributions.DASHBOARD_PANELS``) for its rows — the kernel
names no app.
"""

from urllib.parse import urlencode

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_safe

from loopx_site.core import admin_site, contributions, dashboard_selectors


def changelist(model: str, **params) -> str:
    """The admin changelist of ``model`` (``"app_label.model"``), filtered by ``params``."""
    app_label, model_name = model.split(".")
    url = reverse(f"admin:{app_label}_{model_name}_changelist")
    return f"{url}?{urlencode(params)}" if params else url


@require_safe
def dashboard_view(request):
    if not request.user.has_perms(dashboard_selectors.view_permissions()):
        raise PermissionDenied("The dashboard needs view permission on every model it counts.")
    data = dashboard_selectors.dashboard()
    for goal in data["goals"]:
        by_goal = (
            {"goal__id__exact": goal["pk"]} if goal["pk"] is not None else {"q": goal["goal_id"]}
        )
        goal["links"] = {"agents": changelist("core.agent", **by_goal)}
    for _key, section in contributions.DASHBOARD_SECTIONS:
        section.add_links(request, data)
    goal_ids = [goal["goal_id"] for goal in data["goals"]]
    panels = [panel(goal_ids) for _key, panel in contributions.DASHBOARD_PANELS]
    for goal in data["goals"]:
        goal["panels"] = [
            {**panel, "rows": panel["rows"].get(goal["goal_id"], [])} for panel in panels
        ]
    context = {
        **admin.site.each_context(request),
        "title": "Operator dashboard",
        "subtitle": None,
        "is_nav_sidebar_enabled": False,  # the matrix needs the width
        "review_todo": admin_site.review_todo(request),
        **data,
    }
    return TemplateResponse(request, "admin/loopx_dashboard.html", context)


def front_page(request):
    """``/``: what this service is, with links to the admin, the dashboard and the API
    docs (the same page in every mode, so "View site" never lands on a 404)."""
    return TemplateResponse(request, "loopx/front.html", {})


def no_favicon(request):
    """Browsers ask for /favicon.ico on every admin page; answer "no icon" (204)
    instead of a 404 in every operator's console."""
    return HttpResponse(status=204)
