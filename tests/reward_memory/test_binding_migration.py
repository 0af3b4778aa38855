"""The per-Agent experiment binding migration splits a Goal's one row into one row per
allowlisted Agent, each keeping its own receipt."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("reward_memory", "0006_replay_event_id_key"), ("core", "0005_exact_fulltext")]
AFTER = [("reward_memory", "0007_roles_per_agent_binding")]


@pytest.mark.django_db(transaction=True)
def test_a_goal_row_becomes_one_binding_per_allowlisted_agent():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    apps = executor.loader.project_state(BEFORE).apps
    Goal, Agent = apps.get_model("core", "Goal"), apps.get_model("core", "Agent")
    Binding = apps.get_model("reward_memory", "ExperimentBinding")
    now = "2026-12-01T12:00:00Z"
    goal = Goal.objects.create(goal_id="g", created_at=now, updated_at=now)
    for agent_id in ("a", "b"):
        Agent.objects.create(goal=goal, agent_id=agent_id, created_at=now)
    Binding.objects.create(
        goal=goal,
        enabled=True,
        config_path="experiments/x.json",
        config_digest="sha256:" + "1" * 64,
        agent_allowlist=["a", "b", "ghost"],
        receipts={"a": {"status": "verified"}, "b": {"status": "verified", "n": 2}},
        created_at=now,
        updated_at=now,
    )
    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    apps = executor.loader.project_state(AFTER).apps
    Binding = apps.get_model("reward_memory", "ExperimentBinding")
    rows = {
        r.agent.agent_id: (r.agent_allowlist, r.receipts, r.config_digest)
        for r in Binding.objects.select_related("agent")
    }
    assert rows == {
        "a": (["a"], {"a": {"status": "verified"}}, "sha256:" + "1" * 64),
        "b": (["b"], {"b": {"status": "verified", "n": 2}}, "sha256:" + "1" * 64),
    }
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
