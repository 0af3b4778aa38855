"""``loopx_quota_decision_v0``: the packet a host routes a turn with (read-only).

Built from the ``hooks`` app's primary state only — open Todos, the Agent's committed
settlements and quota spends — plus the turn-start hook dispatch of the participating
capabilities (and the signed capsule when one of them failed). Nothing is written.

Shape (built by ``documents.quota_decision``; documented in docs/turn-recall.md):

``goal_id``, ``agent_id``, ``agent_identity``, ``mode`` (``should-run``), ``project``,
``decision`` (``run``/``idle``), ``should_run``, ``lifecycle_phase``, ``selected_todo``
({todo_id, title, phase, target_key} or null), ``recent_outcomes`` (≤3 compact refs,
newest first), ``next_intent``, ``interaction_state``, ``quota``, ``goal_boundary``
(with ``capabilities.reward_memory`` — status and ``config_runtime_route`` — when the
Agent's experiment is enabled, where LoopX prints it), ``status_health_ok``,
``observed_at``; ``turn_instance_id``, ``turn_start_hooks`` and ``turn_capsule`` only
when present.
"""

from typing import Any

from hooks import selectors as hook_selectors
from hooks.models import HookIntent, QuotaSpend, Todo
from loopx_site.core import clock
from loopx_site.core import selectors as core_selectors
from turn_recall import adapters, documents, turn_start
from turn_recall import contracts as c


def _selected(goal) -> Todo | None:
    return (
        Todo.objects.filter(goal=goal, state=Todo.State.OPEN)
        .only("todo_id", "title", "segment_ref", "replan_count", "revision")
        .order_by("created_at", "todo_id")
        .first()
    )


def _outcomes(goal_id: str, agent_id: str) -> list[str]:
    rows = hook_selectors.recent_settlements(goal_id, agent_id, limit=c.MAX_RECENT_OUTCOMES)
    return [f"{r['event_kind']}:todo:{r['todo_id']}" for r in rows]


def should_run(
    *, goal_id: str, agent_id: str, turn_instance_id: str | None = None, area: str = c.AREA
) -> dict[str, Any]:
    """The packet (read-only); with ``turn_instance_id`` it names the turn it was built
    for, which ``agent_turn_recall`` then requires (as LoopX's heartbeat receipt)."""
    agent = core_selectors.get_agent(goal_id, agent_id, area=area)
    goal = agent.goal
    todo = _selected(goal)
    phase = "idle"
    selected = None
    if todo is not None:
        phase = "replanning" if todo.replan_count else "executing"
        selected = {
            "todo_id": todo.todo_id,
            "title": todo.title,
            "phase": phase,
            "target_key": todo.segment_ref or None,
            "revision": todo.revision,
        }
    binding = adapters.turn_admission_binding(goal_id, agent_id)
    now = clock.iso(clock.now())
    packet = documents.quota_decision(
        goal_id=goal_id,
        agent_id=agent_id,
        project=binding["project"] if binding else None,
        selected=selected,
        phase=phase,
        recent_outcomes=_outcomes(goal_id, agent_id),
        open_todos=Todo.objects.filter(goal=goal, state=Todo.State.OPEN).count(),
        pending_hook_intents=HookIntent.objects.filter(
            agent=agent, status=HookIntent.Status.PENDING
        ).count(),
        spent_units=QuotaSpend.objects.filter(agent=agent).count(),
        observed_at=now,
        reward_memory=adapters.quota_reward_memory(goal_id, agent_id),
        turn_instance_id=turn_instance_id,
    )
    hooks = turn_start.dispatch(goal, agent)
    if hooks is not None:
        packet["turn_start_hooks"] = hooks
        signed = turn_start.signed_capsule(goal_id, agent_id, hooks, now)
        if signed is not None:
            packet["turn_capsule"] = signed
    return packet
