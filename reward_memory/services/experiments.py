"""Experiment status until the experiment registry (config v1, configure_goal) exists:
LoopX's ``reward_memory_experiment_status_v1`` with ``status: disabled``,
``available: false`` and both automatic flags off — ordinary Goal work continues.

Until the registry exists, the operator-registered route of a (Goal, Agent) is the
corpus allowlist row an operator registered (``agent_allowlist``): ``configured_for_agent``
says whether any corpus allowlists the pair; ``ingest-event --execute`` needs it."""

from typing import Any

from loopx_site.core.selectors import get_agent
from reward_memory import contracts as c
from reward_memory.errors import AREA


def experiment_status(*, goal_id: str, agent_id: str) -> dict[str, Any]:
    from reward_memory import selectors

    get_agent(goal_id, agent_id, area=AREA)
    routed = any(
        selectors.is_allowlisted(corpus, goal_id, agent_id) for corpus in selectors.list_corpora()
    )
    return {
        "ok": True,
        "schema_version": c.EXPERIMENT_STATUS_SCHEMA,
        "goal_id": goal_id,
        "agent_id": agent_id,
        "status": "disabled",
        "available": False,
        "experimental": True,
        "enabled": False,
        "configured_for_agent": routed,
        "config_pointer_registered": False,
        "automatic_recall": False,
        "automatic_ingest": False,
        "fail_open": True,
        "external_writes_performed": False,
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
