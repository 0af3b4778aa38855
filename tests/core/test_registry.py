import pytest
from django.db import IntegrityError

from loopx_site.core import access, services
from loopx_site.core.models import Agent, Goal
from tests.factories import AgentFactory, GoalFactory
from tests.helpers import run_cli


def test_register_goal_is_idempotent_and_only_adds_agents(db):
    first = services.register_goal(goal_id="g1", agent_ids=["a", "b"], state_ref="s1")
    again = services.register_goal(goal_id="g1", agent_ids=["b", "c"])
    assert first.created is True
    assert again.created is False
    assert again.added_agents == ["c"]
    assert sorted(Agent.objects.filter(goal__goal_id="g1").values_list("agent_id", flat=True)) == [
        "a",
        "b",
        "c",
    ]
    assert Goal.objects.get(goal_id="g1").state_ref == "s1"


def test_same_agent_name_in_two_goals_is_two_agents(db):
    services.register_goal(goal_id="g1", agent_ids=["author"])
    services.register_goal(goal_id="g2", agent_ids=["author"])
    assert Agent.objects.filter(agent_id="author").count() == 2


def test_agent_unique_per_goal_constraint(db):
    agent = AgentFactory(agent_id="x")
    with pytest.raises(IntegrityError):
        Agent.objects.create(goal=agent.goal, agent_id="x", created_at=agent.created_at)


def test_goal_register_command_prints_goal_with_agents(db):
    result = run_cli(
        "goal",
        "register",
        "--goal-id",
        "g1",
        "--agent-id",
        "a",
        "--agent-id",
        "b",
        "--state-ref",
        "ref-1",
        "--execute",
        "--format",
        "json",
    )
    assert result.code == 0, result.stdout
    payload = result.json
    assert payload["status"] == "registered"
    assert payload["goal"]["agents"] == ["a", "b"]
    assert payload["goal"]["state_ref"] == "ref-1"
    again = run_cli("goal", "register", "--goal-id", "g1", "--agent-id", "a", "--execute")
    assert again.json["created"] is False
    assert again.json["status"] == "unchanged"
    assert Goal.objects.count() == 1


def test_goal_register_without_execute_previews_and_writes_nothing(db):
    result = run_cli("goal", "register", "--goal-id", "g1", "--agent-id", "a")
    assert result.code == 0, result.stdout
    assert result.json["status"] == "preview"
    assert result.json["created"] is True
    assert result.json["goal"]["agents"] == ["a"]
    assert not Goal.objects.exists()


def test_state_ref_change_preview_names_the_change_and_warns_without_writing(db):
    services.register_goal(goal_id="g1", agent_ids=["a"], state_ref="s1")
    result = run_cli(
        "goal", "register", "--goal-id", "g1", "--agent-id", "a", "--agent-id", "b",
        "--state-ref", "s2",
    )  # fmt: skip
    payload = result.json
    assert payload["status"] == "preview"
    assert payload["changes"] == {"state_ref": {"from": "s1", "to": "s2"}}
    assert payload["added_agents"] == ["b"]
    assert payload["goal"]["state_ref"] == "s2"
    assert "migrate-scope" in payload["warnings"][0]
    goal = Goal.objects.get(goal_id="g1")
    assert goal.state_ref == "s1"
    assert list(goal.agents.values_list("agent_id", flat=True)) == ["a"]
    executed = run_cli(
        "goal", "register", "--goal-id", "g1", "--agent-id", "a", "--state-ref", "s2", "--execute"
    )
    assert executed.json["status"] == "registered"
    assert Goal.objects.get(goal_id="g1").state_ref == "s2"


def test_goal_list_text_is_a_table(db):
    GoalFactory(goal_id="g1")
    result = run_cli("goal", "list", "--format", "text")
    assert result.code == 0
    assert result.stdout.splitlines()[0].split()[:2] == ["GOAL_ID", "AGENTS"]
    assert "g1" in result.stdout


@pytest.mark.parametrize(
    ("argv", "code", "field"),
    [
        (
            ["goal", "register", "--goal-id", "bad id", "--agent-id", "a"],
            "invalid_argument",
            "goal_id",
        ),
        (["goal", "register", "--goal-id", "g", "--agent-id", "-x"], "invalid_argument", None),
        (["goal", "register", "--agent-id", "a"], "invalid_argument", "goal_id"),
        (
            ["goal", "register", "--goal-id", "g", "--agent-id", "a", "--instance-id", "x y"],
            "invalid_argument",
            "instance_id",
        ),
        (["goal", "frobnicate"], "invalid_argument", None),
        (["goal"], "invalid_argument", None),
    ],
)
def test_bad_registry_input_is_one_structured_error_with_exit_2(db, argv, code, field):
    result = run_cli(*argv)
    assert result.code == 2
    payload = result.json  # exactly one JSON document, no usage dump
    assert payload["ok"] is False
    assert payload["schema_version"] == "loopx_error_v0"
    assert payload["code"] == code
    if field:
        assert payload["field"] == field
    assert "Traceback" not in result.stdout + result.stderr
    assert Goal.objects.count() == 0


def test_token_create_scopes_to_unknown_goal_is_404_style_error(db):
    result = run_cli("token", "create", "--goal-id", "nope", "--execute")
    assert result.code == 2
    assert result.json["code"] == "goal_not_registered"


def test_token_create_for_unknown_agent_is_agent_not_registered(db):
    GoalFactory(goal_id="g1")
    result = run_cli("token", "create", "--goal-id", "g1", "--agent-id", "ghost")
    assert result.json["code"] == "agent_not_registered"  # the preview runs the same checks


def test_token_create_without_execute_previews_and_issues_nothing(db):
    from loopx_site.core.models import HostToken

    GoalFactory(goal_id="g1")
    result = run_cli("token", "create", "--goal-id", "g1")
    assert result.code == 0
    assert result.json["status"] == "preview"
    assert "token" not in result.json
    assert not HostToken.objects.exists()


def test_token_secret_is_printed_once_and_only_its_digest_stored(db):
    GoalFactory(goal_id="g1")
    result = run_cli("token", "create", "--goal-id", "g1", "--execute")
    secret = result.json["token"]
    from loopx_site.core.models import HostToken

    stored = HostToken.objects.get()
    assert secret not in (stored.key_digest, stored.prefix)
    assert stored.key_digest == access.digest_token(secret)
