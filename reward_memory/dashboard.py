"""Reward Memory's panels on the operator dashboard (declared in
``settings.LOOPX_DASHBOARD_PANELS``, so the kernel's dashboard imports no app).

A panel is plain data: a title, a caption for operators, column headers and, per Goal,
rows of cells (ids, states and flags only — no summary, path or scope ref).
"""

from typing import Any

from reward_memory import selectors


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
            route = selectors.experiment_route(goal_id, agent_id)
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
