"""Reward Memory on the operator dashboard, registered in ``RewardMemoryConfig.ready()``
(the kernel's dashboard imports no app):

- its section (``contributions.DASHBOARD_SECTIONS``): pending ingests and provider runs
  not succeeded per Goal, and the corpus health matrix with its legend and links;
- its experiments panel (``contributions.DASHBOARD_PANELS``): plain data — a title, a
  caption for operators, column headers and, per Goal, rows of cells (ids, states and
  flags only — no summary, path or scope ref).
"""

from typing import Any

from django.db.models import Count, Exists, Max, OuterRef, Q
from django.urls import NoReverseMatch, reverse

from loopx_site.core.admin_dashboard import changelist
from loopx_site.core.contributions import DashboardRead
from loopx_site.core.dashboard_selectors import by_goal
from reward_memory import selectors
from reward_memory.models import (
    ApplicationReceipt,
    Corpus,
    MemoryRecord,
    PendingIngest,
    RecallReceipt,
)
from reward_memory.services import routes

#: Each health state of a corpus, in LoopX's order, and the annotated column that
#: answers it here (``None``: needs a provider preflight, not probed by the dashboard).
HEALTH_COLUMNS = {
    "corpus_present": "active",
    "index_present": None,
    "retrieval_query_succeeded": "queried",
    "result_readback_verified": "verified",
    "memory_applied_with_receipt": "applied",
}
HEALTH_STATES = tuple(HEALTH_COLUMNS)

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


# -- the section: reads ------------------------------------------------------------------
def read() -> DashboardRead:
    """Pending ingests and failed provider runs per Goal, and the corpus health matrix
    (three queries)."""
    ingests = pending_ingests()
    providers = provider_failures()
    corpora = corpus_health_matrix()
    goals = {
        gid: {"pending_ingests": ingests.get(gid, []), "provider_failures": providers.get(gid, [])}
        for gid in set(ingests) | set(providers)
    }
    return DashboardRead(
        goals=goals,
        empty={"pending_ingests": [], "provider_failures": []},
        page={"corpora": corpora, "health_states": HEALTH_STATES},
        for_goal=lambda gid: {"corpora": [c for c in corpora if gid in c["goal_ids"]]},
    )


def pending_ingests() -> dict[str, list[dict[str, Any]]]:
    """Per Goal: unresolved Reward Memory ingest sidecars by reason."""
    rows = (
        PendingIngest.objects.filter(resolved_at__isnull=True)
        .values("goal__goal_id", "reason")
        .annotate(count=Count("id"), latest=Max("created_at"))
        .order_by("goal__goal_id", "reason")
    )
    return by_goal(rows, "goal__goal_id")


def provider_failures() -> dict[str, list[dict[str, Any]]]:
    """Per Goal: recorded provider runs that did not succeed (Reward Memory recalls with
    ``provider_unavailable`` or ``guard_blocked``; the recorded run kinds today)."""
    rows = (
        RecallReceipt.objects.filter(status__in=("provider_unavailable", "guard_blocked"))
        .values("goal__goal_id", "status")
        .annotate(count=Count("id"), last=Max("created_at"))
        .order_by("goal__goal_id", "status")
    )
    return by_goal(rows, "goal__goal_id")


def corpus_health_matrix() -> list[dict[str, Any]]:
    """Every corpus with the four health states LoopX observes in its own rows (one
    query); ``index_present`` needs a provider preflight, so it reads ``None`` (not
    probed) here — the corpus health API/command probes it."""
    rows = (
        Corpus.objects.annotate(
            queried=Exists(
                RecallReceipt.objects.filter(corpus=OuterRef("pk"), status__in=("ok", "empty"))
            ),
            verified=Exists(
                MemoryRecord.objects.filter(
                    corpus=OuterRef("pk"), readback_verified_at__isnull=False
                )
            ),
            applied=Exists(
                ApplicationReceipt.objects.filter(corpus=OuterRef("pk"), status="applied")
            ),
            active_records=Count("records", filter=Q(records__lifecycle_state="active")),
        )
        .values(
            "pk",
            "corpus_id",
            "project",
            "memory_class",
            "active",
            "agent_allowlist",
            "queried",
            "verified",
            "applied",
            "active_records",
        )
        .order_by("corpus_id")
    )
    out = []
    for row in rows:
        allow = row.pop("agent_allowlist") or []
        out.append(
            {
                **{k: row[k] for k in ("pk", "corpus_id", "project", "memory_class")},
                "active_records": row["active_records"],
                "goal_ids": sorted({_allowed_goal(a) for a in allow} - {None}),
                "health": {
                    state: None if column is None else row[column]
                    for state, column in HEALTH_COLUMNS.items()
                },
            }
        )
    return out


def _allowed_goal(entry) -> str | None:
    """A corpus allowlist entry is stored as ``"goal/agent"`` (or a mapping)."""
    if isinstance(entry, dict):
        return entry.get("goal_id")
    if isinstance(entry, str) and "/" in entry:
        return entry.split("/", 1)[0]
    return None


# -- the section: links and the legend ----------------------------------------------------
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


def link(request, data: dict[str, Any]) -> None:
    """Each Goal's pending ingests and failed recalls, each corpus's pages and "probe
    now", its health cells and the health legend."""
    for goal in data["goals"]:
        gid = goal["goal_id"]
        goal["links"]["pending"] = changelist(
            "reward_memory.pendingingest", resolved_at__isempty=1, q=gid
        )
        goal["links"]["recalls"] = changelist("reward_memory.recallreceipt", q=gid)
        for row in goal["provider_failures"]:
            row["link"] = changelist(
                "reward_memory.recallreceipt", status__exact=row["status"], q=gid
            )
        for row in goal["pending_ingests"]:
            row["link"] = changelist(
                "reward_memory.pendingingest",
                resolved_at__isempty=1,
                reason__exact=row["reason"],
                q=gid,
            )
    probed = request.session.get(PROBED_SESSION_KEY) or {}
    for corpus in data["corpora"]:
        corpus["health"] = {**corpus["health"], **probed.get(str(corpus["pk"]), {})}
        _link_corpus(request, corpus)
    data["health_headers"] = [s.replace("_", " ") for s in HEALTH_STATES]
    data["health_legend"] = [
        {
            "label": s.replace("_", " "),
            "meaning": HEALTH_LEGEND[s][0],
            "action": HEALTH_LEGEND[s][1],
        }
        for s in HEALTH_STATES
    ]


def _link_corpus(request, corpus: dict[str, Any]) -> None:
    corpus["link"] = reverse("admin:reward_memory_corpus_change", args=[corpus["pk"]])
    corpus["records_link"] = changelist(
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


# -- the experiments panel ----------------------------------------------------------------


def _flag(route, name: str) -> str:
    """``on``/``off`` with where the setting came from (the config said so, or it was
    omitted and defaults to on)."""
    value = route.automation.get(name)
    if not route.available:
        return "off (unavailable)"
    provenance = (route.config.automation_intent or {}).get(name, "")
    return f"{'on' if value else 'off'}{f' ({provenance})' if provenance else ''}"


def experiments(goal_ids: list[str]) -> dict[str, Any]:
    """Per Goal, each Agent's experiment binding: its route status, automation and the
    reason when automation is unavailable (never a provider call)."""
    rows: dict[str, list[list[str]]] = {}
    for goal_id in goal_ids:
        for binding in selectors.goal_experiment_bindings(goal_id):
            agent_id = binding.agent.agent_id
            route = routes.experiment_route(goal_id, agent_id)
            rows.setdefault(goal_id, []).append(
                [
                    agent_id,
                    "enabled" if binding.enabled else "disabled",
                    route.status,
                    route.reason_code or "—",
                    _flag(route, "automatic_recall"),
                    _flag(route, "automatic_ingest"),
                    str(binding.revision),
                ]
            )
    return {
        "id": "experiments",
        "title": "Reward Memory experiments",
        "caption": (
            "One binding per Agent (configure_goal). Automation runs only while the route is "
            "available: the private config still reads back with its registered digest and "
            "the Agent's canary receipt is verified. Unavailable never blocks ordinary work."
        ),
        "columns": [
            "agent",
            "binding",
            "route",
            "reason",
            "automatic recall",
            "automatic ingest",
            "revision",
        ],
        "empty": "No Agent of this Goal has an experiment binding.",
        "rows": rows,
    }


def provider_deletes(goal_ids: list[str]) -> dict[str, Any]:
    """Per Goal, how many closed records' provider deletes are pending, confirmed or
    failed (counts only)."""
    rows: dict[str, list[list[str]]] = {}
    for goal_id, counts in selectors.provider_deletion_counts(goal_ids).items():
        if any(counts.values()):
            rows[goal_id] = [[state, str(n)] for state, n in counts.items()]
    return {
        "id": "provider_deletes",
        "title": "Provider deletes",
        "caption": (
            "A retired, revoked, superseded, expired or erased record is deleted at its "
            "provider through an outbox: pending rows are retried with backoff by the "
            "background worker until the provider's search no longer returns the record; "
            "failed rows need an operator (admin → Provider deletions → retry)."
        ),
        "columns": ["state", "records"],
        "empty": "No record of this Goal's corpora was closed at a provider.",
        "rows": rows,
    }
