"""Demo data of the registry: Goal ``demo`` with Agents ``author`` and ``reviewer``."""

from loopx_site.core import services


def load(*, log) -> dict:
    registration = services.register_goal(
        goal_id="demo",
        agent_ids=["author", "reviewer"],
        state_ref="goals/demo/state.json",
        execute=True,  # the demo loader is an operator action run from the shell
    )
    status = "created" if registration.created or registration.added_agents else "exists"
    log(f"Goal demo with Agents author, reviewer: {status}")
    return {
        "status": status,
        "goal_id": registration.goal.goal_id,
        "agents": ["author", "reviewer"],
    }
