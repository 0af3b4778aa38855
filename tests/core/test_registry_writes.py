"""Registry writes are operator actions: a host token reads its Goal and nothing more."""

import pytest

from loopx_site.core.models import Agent, Goal


@pytest.mark.parametrize("agent_id", [None, "author"])
@pytest.mark.parametrize("execute", [True, False])
def test_host_token_cannot_change_state_ref(host_client, demo_goal, agent_id, execute):
    client = host_client("demo", agent_id)
    body = {"goal_id": "demo", "agent_ids": ["author"], "state_ref": "moved", "execute": execute}
    response = client.post("/api/v1/goals/", body, format="json")
    assert response.status_code == 403
    assert response.json()["code"] == "scope_forbidden"
    assert response.json()["status"] == "forbidden"
    assert Goal.objects.get(goal_id="demo").state_ref == "goals/demo/state.json"


@pytest.mark.parametrize("agent_id", [None, "author"])
def test_host_token_cannot_add_agents(host_client, demo_goal, agent_id):
    client = host_client("demo", agent_id)
    body = {"goal_id": "demo", "agent_ids": ["intruder"], "execute": True}
    response = client.post("/api/v1/goals/", body, format="json")
    assert response.status_code == 403
    assert not Agent.objects.filter(agent_id="intruder").exists()


def test_host_token_cannot_register_a_new_goal(host_client, demo_goal):
    response = host_client("demo").post(
        "/api/v1/goals/", {"goal_id": "fresh", "agent_ids": ["a"], "execute": True}, format="json"
    )
    assert response.status_code == 403
    assert not Goal.objects.filter(goal_id="fresh").exists()


def test_host_token_still_reads_its_goal(host_client, demo_goal):
    response = host_client("demo").get("/api/v1/goals/demo/")
    assert response.status_code == 200
    assert response.json()["state_ref"] == "goals/demo/state.json"


def test_permitted_operator_changes_state_ref_with_preview_then_execute(operator_client, demo_goal):
    body = {"goal_id": "demo", "agent_ids": ["author"], "state_ref": "moved"}
    preview = operator_client.post("/api/v1/goals/", body, format="json")
    assert preview.status_code == 200
    assert preview.json()["changes"]["state_ref"] == {
        "from": "goals/demo/state.json",
        "to": "moved",
    }
    assert Goal.objects.get(goal_id="demo").state_ref == "goals/demo/state.json"
    done = operator_client.post("/api/v1/goals/", {**body, "execute": True}, format="json")
    assert done.status_code == 200
    assert done.json()["status"] == "registered"
    assert Goal.objects.get(goal_id="demo").state_ref == "moved"
