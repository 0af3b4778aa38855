"""Turn recall takes its (Goal, Agent) from the one caller resolver: a Goal-wide token
may name one of its Agents, but never reaches that Agent's private corpus that way."""

import pytest

from tests.factories import AgentFactory
from tests.reward_memory import factories as rmf
from tests.turn_recall.conftest import SURFACE, packet, remember_guidance
from turn_recall.models import TurnRecallReceipt

GUIDANCE = "Re-read the acceptance criteria before resuming a flaky test fix."
URL = "/api/v1/turn-recall/"


@pytest.fixture
def private_turns(agent, double):
    """The turn-admission corpus, private to demo/author, holding one guidance record."""
    AgentFactory(goal=agent.goal, agent_id="reviewer")
    rmf.operator_accounts()
    rmf.role_binding("user:maint-1", "maintainer")  # the guidance event's source role
    corpus = rmf.register(
        "turns",
        provider_id="double",
        surfaces=[SURFACE],
        visibility="private",
        agents=[("demo", "author")],
    )
    remember_guidance(GUIDANCE)
    double.reset_calls()
    return corpus


def test_goal_wide_token_naming_an_agent_gets_no_private_guidance_and_writes_nothing(
    db, todo, private_turns, double, host_client
):
    body = {
        "agent_id": "author",
        "turn_instance_id": "turn-1",
        "quota_decision": packet(),
        "execute": True,
    }
    goal_wide = host_client("demo").post(URL, body, format="json")
    assert goal_wide.status_code == 200
    doc = goal_wide.json()
    assert (doc["status"], doc["provider_call_count"]) == ("disabled", 0)
    assert GUIDANCE not in goal_wide.content.decode()
    assert double.call_count == 0
    assert not TurnRecallReceipt.objects.exists()  # nothing a later replay could serve
    own = host_client("demo", "author").post(URL, body, format="json")
    assert own.json()["status"] == "applied"
    assert own.json()["context"]["guidance"][0]["content_summary"] == GUIDANCE
    # the Agent's own receipt now exists: the Goal-wide token still cannot replay it
    again = host_client("demo").post(URL, body, format="json")
    assert again.json()["status"] == "disabled"
    assert GUIDANCE not in again.content.decode()


def test_goal_wide_token_must_name_an_agent_and_an_agent_token_only_its_own(
    db, todo, private_turns, host_client
):
    body = {"turn_instance_id": "turn-1", "quota_decision": packet()}
    missing = host_client("demo").post(URL, body, format="json")
    assert (missing.status_code, missing.json()["field"]) == (400, "agent_id")
    other = host_client("demo", "reviewer").post(URL, body | {"agent_id": "author"}, format="json")
    assert (other.status_code, other.json()["status"]) == (403, "forbidden")
