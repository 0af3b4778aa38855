"""The operator dashboard: one read-only admin page, linked from the admin index.

A thin adapter: ``dashboard_selectors.dashboard()`` does the reading (one query per
panel); this view adds the admin context, the links into filtered changelists, the
health legend, and each corpus's "probe now" button (a POST to the corpus admin's
read-only probe view, named by URL so the kernel imports no app).
"""

from urllib.parse import urlencode

from django.conf import settings
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse
from django.utils.module_loading import import_string
from django.views.decorators.http import require_safe

from loopx_site.core import admin_site, dashboard_selectors

CELL = {True: ("ok", "yes"), False: ("bad", "no"), None: ("unknown", "not probed")}
#: States that record something having happened (a recall, a readback, an application):
#: before it first happens they read "not yet", in a neutral colour, not as a fault.
ACTIVITY_STATES = frozenset(
    {"retrieval_query_succeeded", "result_readback_verified", "memory_applied_with_receipt"}
)
NOT_YET = ("pending", "not yet")

#: What each health state means and what an operator does when it reads "no".
HEALTH_LEGEND = {
    "corpus_present": (
        "The corpus is registered and active.",
        "It was deactivated: register it again (reward_memory register-corpus) or move the "
        "Agents' surfaces to another corpus.",
    ),
    "index_present": (
        "The provider's index for this corpus answers its read-only preflight.",
        "Check the corpus's provider binding and the provider itself; ordinary work goes on "
        "without recall meanwhile.",
    ),
    "retrieval_query_succeeded": (
        "At least one recall from this corpus returned (with or without items).",
        "Expected until an Agent first recalls from it; if Agents do, open the Goal's "
        '"Provider runs not succeeded" to see why their recalls failed.',
    ),
    "result_readback_verified": (
        "A record written to the provider was read back byte for byte.",
        "Expected until a first record is activated; otherwise see the Goal's pending "
        "ingests, which the next turn start retries.",
    ),
    "memory_applied_with_receipt": (
        "An Agent applied a recalled memory and filed an application receipt with the "
        "artifact verified.",
        "Expected until an Agent uses what it recalled; nothing to fix.",
    ),
}


def _changelist(model: str, **params) -> str:
    app_label, model_name = model.split(".")
    url = reverse(f"admin:{app_label}_{model_name}_changelist")
    return f"{url}?{urlencode(params)}" if params else url


VIEW_PERMISSIONS = (
    "core.view_agent",
    "preferences.view_preferencescope",
    "reward_memory.view_pendingingest",
    "hooks.view_hookdispatch",
    "reward_memory.view_recallreceipt",
    "reward_memory.view_corpus",
)


def _cell(state: str, value: bool | None) -> tuple[str, str]:
    return NOT_YET if value is False and state in ACTIVITY_STATES else CELL[value]


#: Session key of the last "probe now" results: ``{corpus pk: {state: value}}``. The
#: dashboard shows a probed value until the session ends (it never probes on its own).
PROBED_SESSION_KEY = "loopx_probed"


def health_words(health: dict[str, bool | None]) -> str:
    """``state: word`` for each health state, in the dashboard's own words (a probe's
    message and the table never disagree: "not yet", not "no", before a first recall)."""
    return "; ".join(f"{s.replace('_', ' ')}: {_cell(s, v)[1]}" for s, v in health.items())


def remember_probe(request, corpus_pk: int, health: dict[str, bool | None]) -> None:
    probed = dict(request.session.get(PROBED_SESSION_KEY) or {})
    probed[str(corpus_pk)] = health
    request.session[PROBED_SESSION_KEY] = probed


def _probe_link(request, corpus_pk) -> str | None:
    if not request.user.has_perm("reward_memory.view_corpus"):
        return None
    try:
        return reverse("admin:reward_memory_corpus_probe", args=[corpus_pk])
    except NoReverseMatch:  # the corpus admin is not installed
        return None


@require_safe
def dashboard_view(request):
    if not request.user.has_perms(VIEW_PERMISSIONS):
        raise PermissionDenied("The dashboard needs view permission on every model it counts.")
    data = dashboard_selectors.dashboard()
    for goal in data["goals"]:
        gid, pk = goal["goal_id"], goal["pk"]
        # Filters the changelists accept: the Goal FK filter where the admin lists it,
        # else its search box (which covers the goal id); hook dispatches filter by
        # status and failure code only.
        by_goal = {"goal__id__exact": pk} if pk is not None else {"q": gid}
        goal["links"] = {
            "agents": _changelist("core.agent", **by_goal),
            "scopes": _changelist("preferences.preferencescope", **by_goal),
            "journal": _changelist(
                "preferences.preferenceoperation",
                **({"scope__goal__id__exact": pk} if pk is not None else {"q": gid}),
            ),
            "pending": _changelist("reward_memory.pendingingest", resolved_at__isempty=1, q=gid),
            "dispatches": _changelist("hooks.hookdispatch", status__exact="failed"),
            "recalls": _changelist("reward_memory.recallreceipt", q=gid),
        }
        for row in goal["hook_failures"]:
            row["link"] = _changelist(
                "hooks.hookdispatch", status__exact="failed", failure_code=row["failure_code"] or ""
            )
        for row in goal["provider_failures"]:
            row["link"] = _changelist(
                "reward_memory.recallreceipt", status__exact=row["status"], q=gid
            )
        for row in goal["pending_ingests"]:
            row["link"] = _changelist(
                "reward_memory.pendingingest",
                resolved_at__isempty=1,
                reason__exact=row["reason"],
                q=gid,
            )
        for scope in goal["scopes"]:
            scope["link"] = reverse("admin:preferences_preferencescope_change", args=[scope["pk"]])
    probed = request.session.get(PROBED_SESSION_KEY) or {}
    for corpus in data["corpora"]:
        corpus["health"] = {**corpus["health"], **probed.get(str(corpus["pk"]), {})}
        corpus["link"] = reverse("admin:reward_memory_corpus_change", args=[corpus["pk"]])
        corpus["records_link"] = _changelist(
            "reward_memory.memoryrecord", corpus__id__exact=corpus["pk"]
        )
        corpus["probe_link"] = _probe_link(request, corpus["pk"])
        corpus["cells"] = [
            {
                "state": state,
                "css": _cell(state, value)[0],
                "label": _cell(state, value)[1],
                "meaning": f"{state.replace('_', ' ')}: {HEALTH_LEGEND[state][0]}",
            }
            for state, value in corpus["health"].items()
        ]
    goal_ids = [goal["goal_id"] for goal in data["goals"]]
    panels = [import_string(path)(goal_ids) for path in settings.LOOPX_DASHBOARD_PANELS]
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
        "health_headers": [s.replace("_", " ") for s in data["health_states"]],
        "health_legend": [
            {
                "label": s.replace("_", " "),
                "meaning": HEALTH_LEGEND[s][0],
                "action": HEALTH_LEGEND[s][1],
            }
            for s in data["health_states"]
        ],
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
