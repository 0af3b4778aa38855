"""Agent Turn Recall's part of a Goal erasure (``loopx_site.core.erasure``): the guidance
a receipt keeps for replay is removed; the receipt (ids, digests, counts) stays, so a
replayed turn answers from it with no guidance instead of recalling again."""

from typing import Any

from turn_recall.models import TurnRecallReceipt


def erase(*, goal, agent=None) -> dict[str, Any]:
    """Erase the Goal's (or the Agent's) turn-recall guidance."""
    rows = TurnRecallReceipt.objects.filter(goal_id=goal.goal_id)
    if agent is not None:
        rows = rows.filter(agent_id=agent.agent_id)
    count = rows.update(guidance=[])
    return {"removed": {"turn_recall.TurnRecallReceipt": count}}
