"""Reads of the registry, shared by every app's services and adapters."""

from django.db.models import QuerySet

from loopx_site.core.errors import DomainError
from loopx_site.core.models import Agent, Goal
from loopx_site.core.validation import require_identifier


def get_goal(goal_id: str, *, area: str = "loopx") -> Goal:
    """The registered Goal or ``goal_not_registered`` (404)."""
    require_identifier(goal_id, "goal_id", area=area)
    try:
        return Goal.objects.get(goal_id=goal_id)
    except Goal.DoesNotExist:
        raise DomainError(
            "goal_not_registered",
            f"Goal {goal_id!r} is not registered",
            field="goal_id",
            area=area,
        ) from None


def get_agent(goal_id: str, agent_id: str, *, area: str = "loopx") -> Agent:
    """The registered Agent of that Goal, or ``goal_/agent_not_registered`` (404)."""
    require_identifier(goal_id, "goal_id", area=area)
    require_identifier(agent_id, "agent_id", area=area)
    agent = (
        Agent.objects.select_related("goal")
        .filter(goal__goal_id=goal_id, agent_id=agent_id)
        .first()
    )
    if agent is None:
        get_goal(goal_id, area=area)  # raises goal_not_registered when that is the cause
        raise DomainError(
            "agent_not_registered",
            f"Agent {agent_id!r} is not registered in Goal {goal_id!r}",
            field="agent_id",
            area=area,
        )
    return agent


def list_goals(*, goal_ids: list[str] | None = None) -> QuerySet[Goal]:
    qs = Goal.objects.prefetch_related("agents").order_by("goal_id")
    if goal_ids is not None:
        qs = qs.filter(goal_id__in=goal_ids)
    return qs


def goal_payload(goal: Goal) -> dict:
    """The one output shape of a Goal (CLI and API)."""
    from loopx_site.core import clock

    return {
        "goal_id": goal.goal_id,
        "state_ref": goal.state_ref or None,
        "instance_id": goal.instance_id or None,
        "agents": sorted(a.agent_id for a in goal.agents.all()),
        "created_at": clock.iso(goal.created_at),
        "updated_at": clock.iso(goal.updated_at),
    }
