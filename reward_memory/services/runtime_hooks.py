"""Automatic Reward Memory hooks at declared module boundaries.

A module calls ``run_boundary_hook`` at one of its named boundaries
(``DECLARED_BOUNDARIES``: Issue Fix patch planning, the reviewer-facing summary and the
reviewer notification just before send). The hook:

* resolves the (Goal, Agent)'s experiment route (``routes.experiment_route``) — not
  available, boundary not configured, or the flag off (explicit ``false`` included) →
  nothing runs and **zero provider calls**;
* recall (``automatic_recall``): the module supplies the queries; the configured
  surface's recall profile bounds them (function_boundary: exactly one;
  bounded_agentic_search: at most ``max_queries``); corpora are read in the configured
  order and the first corpus whose results read back exactly stops the search;
* ingest (``automatic_ingest``): a compact, already-distilled event goes to the
  surface's ``ingest_corpus_id`` through the ordinary ingest pipeline (standing policy,
  exact readback, idempotent);
* returns what ran (``BoundaryHookRun``: the bounded private context for the in-process
  caller), which ``documents.boundary_hooks`` renders with a compact, public-safe
  application receipt (digests, statuses, call counts). Provider or guard
  failures fail open: the module's original output stands, never a user gate.

Without ``execute`` it only reports what would run (no provider call, no write).
"""

from dataclasses import dataclass, field
from typing import Any

from loopx_site.core.selectors import get_agent
from reward_memory import contracts as c
from reward_memory import selectors
from reward_memory.domain import loopx
from reward_memory.domain import validation as v
from reward_memory.errors import AREA, RewardMemoryError, invalid
from reward_memory.services import routes
from reward_memory.services.ingest import ingest_event
from reward_memory.services.recalls import recall_guidance

DECLARED_BOUNDARIES = (
    "issue_fix.patch_planning",
    "reviewer_artifact.summary",
    "reviewer_notification.before_send",
)
MAX_CONTEXT_ITEMS = 8


@dataclass
class BoundaryHookRun:
    """One boundary hook call as it runs (``documents.boundary_hooks`` renders it)."""

    goal_id: str
    agent_id: str
    boundary: str
    executed: bool
    route: Any  # the Agent's experiment route
    recall_planned: bool = False
    ingest_planned: bool = False
    skip_reason: str | None = None
    recall: dict[str, Any] | None = None
    ingest: dict[str, Any] | None = None
    #: private bounded guidance: the records of the first corpus with a hit (at most
    #: ``MAX_CONTEXT_ITEMS``), rendered for the in-process caller only
    records: list[Any] = field(default_factory=list)
    provider_call_count: int = 0
    status: str = "skipped"


def run_boundary_hook(
    *,
    goal_id: str,
    agent_id: str,
    boundary: str,
    queries: list[str] | None = None,
    event: dict[str, Any] | None = None,
    execute: bool = False,
    viewer: selectors.Viewer = None,
) -> BoundaryHookRun:
    """What the hook at ``boundary`` ran (the edges render it with
    ``documents.boundary_hooks.boundary_hook``). ``viewer``: the caller's own read scope
    (``loopx_site.core.access.Acting.viewer``; ``None`` for an operator or an in-process
    identity) — a Goal-wide token that names an Agent never reaches that Agent's private
    corpora here either."""
    get_agent(goal_id, agent_id, area=AREA)
    boundary = v.choice(boundary, "boundary", DECLARED_BOUNDARIES)
    queries = [v.text(q, f"queries.{i}", max_length=500) for i, q in enumerate(queries or [])]
    if event is not None and not isinstance(event, dict):
        raise invalid("event", "event must be an object")
    route = routes.experiment_route(goal_id, agent_id)
    run = BoundaryHookRun(goal_id, agent_id, boundary, execute, route)
    surface = route.surface(boundary)
    automation = route.automation
    want_recall = bool(queries) and automation["automatic_recall"] and surface is not None
    want_ingest = event is not None and automation["automatic_ingest"] and surface is not None
    run.recall_planned, run.ingest_planned = want_recall, want_ingest
    if surface is not None and queries:
        profile = surface.recall_profile
        ceiling = 1 if profile["mode"] == c.FUNCTION_BOUNDARY else profile["max_queries"]
        if len(queries) > ceiling:
            raise invalid(
                "queries",
                f"the {profile['profile_id']} recall profile allows at most {ceiling} "
                "query at this boundary",
            )
    run.skip_reason = _skip_reason(route, surface, automation, queries, event)
    if execute and want_recall:
        run.recall, run.records, calls = _recall(
            goal_id, agent_id, boundary, surface, queries, viewer
        )
        run.provider_call_count += calls
    if execute and want_ingest:
        run.ingest, calls = _ingest(goal_id, agent_id, surface, event, viewer)
        run.provider_call_count += calls
    run.status = _status(execute, want_recall, want_ingest, run.recall, run.ingest)
    return run


def _skip_reason(route, surface, automation, queries, event) -> str | None:
    """Why nothing runs (``None`` when something does)."""
    if not route.available:
        return f"experiment_{route.status}"
    if surface is None:
        return "boundary_not_configured"
    if not queries and event is None:
        return "nothing_to_do"
    recall_on = bool(queries) and automation["automatic_recall"]
    ingest_on = event is not None and automation["automatic_ingest"]
    return None if recall_on or ingest_on else "automation_off"


def _status(execute, want_recall, want_ingest, recall, ingest) -> str:
    if not (want_recall or want_ingest):
        return "skipped"
    if not execute:
        return "planned"
    if recall and recall["status"] == "completed" and recall["item_count"]:
        return "recalled" if not ingest else "recalled_and_ingested"
    if ingest and ingest["status"] == c.INGEST_ACTIVATED:
        return "ingested"
    return "no_effect"


def _recall(goal_id, agent_id, boundary, surface, queries, viewer=None):
    """``(recall, records, provider calls)``: what the recall answered, the bounded
    private guidance (records) of the first corpus with a hit, and the provider calls it
    made."""
    limit = surface.recall_profile["limit"]
    calls, statuses = 0, []
    for corpus_id in surface.corpus_ids:  # configured order; the first exact hit stops
        for query in queries:
            guidance = recall_guidance(
                goal_id=goal_id,
                agent_id=agent_id,
                corpus_id=corpus_id,
                surface=boundary,
                query=query,
                limit=limit,
                viewer=viewer,
            )
            calls += guidance.provider_calls
            statuses.append(guidance.status)
            if guidance.records:
                records = guidance.records[:MAX_CONTEXT_ITEMS]
                recall = {
                    "status": "completed",
                    "corpus_id": corpus_id,
                    "recall_id": guidance.recall_id,
                    "item_count": len(records),
                }
                return recall, records, calls
    status = c.INGEST_PROVIDER_UNAVAILABLE if "provider_unavailable" in statuses else "empty"
    if statuses and all(s == c.GUARD_BLOCKED for s in statuses):
        status = c.GUARD_BLOCKED
    return {"status": status, "corpus_id": None, "recall_id": None, "item_count": 0}, [], calls


def _ingest(goal_id, agent_id, surface, event, viewer=None):
    """``(ingest, provider calls)``: the compact event's ingest through the ordinary
    pipeline, by status and receipt id (a refusal by its code)."""
    compact = loopx.unwrap(
        {"event": event} if "schema_version" in event else event,
        routed=True,
        route_corpus_id=lambda _surface: surface.ingest_corpus_id,
    )
    if isinstance(compact, dict) and "corpus_id" not in compact:
        compact = {**compact, "corpus_id": surface.ingest_corpus_id}
    try:
        ingested = ingest_event(
            event=compact, goal_id=goal_id, agent_id=agent_id, execute=True, viewer=viewer
        )
    except RewardMemoryError as exc:
        if exc.code in ("goal_not_registered", "agent_not_registered"):
            raise
        return {"status": "refused", "code": exc.code, "receipt_id": None}, 0
    ingest = {
        "status": ingested.status,
        "receipt_id": ingested.receipt_id,
        "record_ref": ingested.record_ref,
        "memory_available_for_recall": ingested.memory_available_for_recall,
    }
    return ingest, ingested.provider_call_count
