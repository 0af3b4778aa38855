"""Experiment status until the experiment registry (config v1, configure_goal) exists:
always ``unavailable`` with both automatic flags off — ordinary Goal work continues."""

from typing import Any

from loopx_site.core.selectors import get_agent
from reward_memory import contracts as c
from reward_memory.errors import AREA


def experiment_status(*, goal_id: str, agent_id: str) -> dict[str, Any]:
    get_agent(goal_id, agent_id, area=AREA)
    return {
        "schema_version": c.EXPERIMENT_STATUS_SCHEMA,
        "goal_id": goal_id,
        "agent_id": agent_id,
        "status": "unavailable",
        "reason": "experiment_registry_unavailable",
        "config_schema": None,
        "corpus_count": 0,
        "surface_count": 0,
        "recall_profile_ids": [],
        "automation": {
            "automatic_recall": False,
            "automatic_ingest": False,
            "fail_open": True,
        },
        "user_gate": False,
    }
