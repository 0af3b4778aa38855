"""Demo data of the registry: Goal ``demo`` with Agents ``author`` and ``reviewer``.

Create-only (``loopx_site.core.demo_kit``): a Goal that exists is kept as the operator
left it — its ``state_ref`` and ``instance_id`` are never set back — and only a missing
Agent is added."""

from loopx_site.core import services
from loopx_site.core.demo_kit import Ledger
from loopx_site.core.models import Goal

GOAL_ID = "demo"
AGENTS = ["author", "reviewer"]
STATE_REF = "goals/demo/state.json"


def load(*, log) -> dict:
    ledger = Ledger()
    goal = Goal.objects.filter(goal_id=GOAL_ID).first()
    existing = set(goal.agents.values_list("agent_id", flat=True)) if goal else set()
    missing = [a for a in AGENTS if a not in existing]
    if goal is None:  # the Goal's scope fields are set only when the demo creates it
        services.register_goal(goal_id=GOAL_ID, agent_ids=AGENTS, state_ref=STATE_REF, execute=True)
    elif missing:  # no state_ref / instance_id given: registration leaves them alone
        services.register_goal(goal_id=GOAL_ID, agent_ids=missing, execute=True)
    ledger.record(f"goal {GOAL_ID}", created=goal is None)
    for agent_id in AGENTS:
        ledger.record(f"agent {GOAL_ID}/{agent_id}", created=agent_id in missing)
    goal = Goal.objects.get(goal_id=GOAL_ID)
    log(f"Goal demo with Agents author, reviewer: {ledger.status} ({ledger.summary()})")
    return ledger.document(
        goal_id=goal.goal_id, state_ref=goal.state_ref or None, agents=list(AGENTS)
    )
