"""Read-only queries of the operator dashboard (``/admin/dashboard/``).

One query per panel, grouped per Goal in Python. Only identifiers, counts, codes, states
and timestamps leave here: no statement, summary, title, quote or provider detail.
Models of the apps are looked up by label so the kernel does not import the apps.
"""

from collections import defaultdict
from typing import Any

from django.apps import apps
from django.db.models import BooleanField, Count, Exists, ExpressionWrapper, Max, OuterRef, Q

from loopx_site.core.models import Agent
from loopx_site.core.selectors import live_scope_q

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


def _by_goal(rows, key="goal_id") -> dict[str, list[dict[str, Any]]]:
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


def preference_scopes() -> dict[str, list[dict[str, Any]]]:
    """Per Goal: each explicit preference scope, its revision and last journal change,
    with ``is_live`` — the scope the Goal points to now (this runtime, the Goal's
    current ``state_ref`` and ``instance_id``: ``selectors.live_scope_q``) — live
    scopes first."""
    scope = apps.get_model("preferences", "PreferenceScope")
    live = ExpressionWrapper(live_scope_q(), output_field=BooleanField())
    rows = (
        scope.objects.annotate(is_live=live)
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
    return _by_goal(rows, "goal_ref")


def pending_ingests() -> dict[str, list[dict[str, Any]]]:
    """Per Goal: unresolved Reward Memory ingest sidecars by reason."""
    pending = apps.get_model("reward_memory", "PendingIngest")
    rows = (
        pending.objects.filter(resolved_at__isnull=True)
        .values("goal__goal_id", "reason")
        .annotate(count=Count("id"), latest=Max("created_at"))
        .order_by("goal__goal_id", "reason")
    )
    return _by_goal(rows, "goal__goal_id")


def hook_failures() -> dict[str, list[dict[str, Any]]]:
    """Per Goal: failed post-writeback hook dispatches by failure code."""
    dispatch = apps.get_model("hooks", "HookDispatch")
    rows = (
        dispatch.objects.filter(status="failed")
        .values("goal__goal_id", "failure_code")
        .annotate(count=Count("id"), last=Max("created_at"))
        .order_by("goal__goal_id", "failure_code")
    )
    return _by_goal(rows, "goal__goal_id")


def provider_failures() -> dict[str, list[dict[str, Any]]]:
    """Per Goal: recorded provider runs that did not succeed (Reward Memory recalls with
    ``provider_unavailable`` or ``guard_blocked``; the recorded run kinds today)."""
    receipt = apps.get_model("reward_memory", "RecallReceipt")
    rows = (
        receipt.objects.filter(status__in=("provider_unavailable", "guard_blocked"))
        .values("goal__goal_id", "status")
        .annotate(count=Count("id"), last=Max("created_at"))
        .order_by("goal__goal_id", "status")
    )
    return _by_goal(rows, "goal__goal_id")


def corpus_health_matrix() -> list[dict[str, Any]]:
    """Every corpus with the four health states LoopX observes in its own rows (one
    query); ``index_present`` needs a provider preflight, so it reads ``None`` (not
    probed) here — the corpus health API/command probes it."""
    corpus = apps.get_model("reward_memory", "Corpus")
    recall = apps.get_model("reward_memory", "RecallReceipt")
    record = apps.get_model("reward_memory", "MemoryRecord")
    application = apps.get_model("reward_memory", "ApplicationReceipt")
    rows = (
        corpus.objects.annotate(
            queried=Exists(
                recall.objects.filter(corpus=OuterRef("pk"), status__in=("ok", "empty"))
            ),
            verified=Exists(
                record.objects.filter(corpus=OuterRef("pk"), readback_verified_at__isnull=False)
            ),
            applied=Exists(application.objects.filter(corpus=OuterRef("pk"), status="applied")),
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


def dashboard() -> dict[str, Any]:
    """The whole dashboard: six queries, then per-Goal sections."""
    goals = goals_with_agents()
    scopes = preference_scopes()
    ingests = pending_ingests()
    hooks = hook_failures()
    providers = provider_failures()
    corpora = corpus_health_matrix()
    known = {g["goal_id"] for g in goals}
    # Goals registered without Agents still get a section (no extra query: their rows
    # in other panels name them).
    for goal_id in sorted((set(scopes) | set(ingests) | set(hooks) | set(providers)) - known):
        goals.append({"pk": None, "goal_id": goal_id, "agents": []})
    sections = [
        {
            **goal,
            "scopes": [r for r in scopes.get(goal["goal_id"], []) if r["is_live"]],
            "earlier_scopes": [r for r in scopes.get(goal["goal_id"], []) if not r["is_live"]],
            "pending_ingests": ingests.get(goal["goal_id"], []),
            "hook_failures": hooks.get(goal["goal_id"], []),
            "provider_failures": providers.get(goal["goal_id"], []),
            "corpora": [c for c in corpora if goal["goal_id"] in c["goal_ids"]],
        }
        for goal in goals
    ]
    return {
        "goals": sections,
        "corpora": corpora,
        "health_states": HEALTH_STATES,
    }
