import pytest

from hooks.models import HookIntent, Todo, TurnSettlement
from tests.factories import AgentFactory, GoalFactory
from tests.helpers import run_cli
from tests.hooks.factories import TodoFactory, settle

BODY = {
    "goal_id": "demo",
    "agent_id": "author",
    "todo_id": "t1",
    "turn_instance_id": "turn-1",
    "event_kind": "todo_completed",
}


@pytest.fixture
def other_goal(db):
    agent = AgentFactory(goal=GoalFactory(goal_id="other"), agent_id="author")
    TodoFactory(goal=agent.goal, todo_id="t1", segment_ref="seg-x")
    return agent


def test_todo_routes_add_and_list(agent, host_client):
    client = host_client("demo")
    preview = client.post(
        "/api/v1/goals/demo/todos/", {"todo_id": "t1", "title": "Write"}, format="json"
    )
    assert preview.status_code == 200
    assert (preview.json()["status"], preview.json()["created"]) == ("preview", False)
    assert client.get("/api/v1/goals/demo/todos/").json()["todos"] == []
    bad = client.post(
        "/api/v1/goals/demo/todos/",
        {"todo_id": "t1", "title": "Write", "execute": "yes"},
        format="json",
    )
    assert bad.status_code == 400
    created = client.post(
        "/api/v1/goals/demo/todos/",
        {"todo_id": "t1", "title": "Write", "execute": True},
        format="json",
    )
    assert created.status_code == 201
    assert created.json()["todo"]["segment_ref"] is None
    again = client.post(
        "/api/v1/goals/demo/todos/",
        {"todo_id": "t1", "title": "Write", "execute": True},
        format="json",
    )
    assert again.status_code == 200
    assert again.json()["status"] == "unchanged"
    conflict = client.post(
        "/api/v1/goals/demo/todos/", {"todo_id": "t1", "title": "Else"}, format="json"
    )  # the preview runs the conflict check too
    assert conflict.status_code == 409
    assert conflict.json()["schema_version"] == "post_writeback_hook_error_v0"
    assert conflict.json()["code"] == "todo_conflict"
    listed = client.get("/api/v1/goals/demo/todos/").json()
    assert [t["todo_id"] for t in listed["todos"]] == ["t1"]


def test_todo_route_refuses_another_goal(agent, other_goal, host_client):
    response = host_client("demo").get("/api/v1/goals/other/todos/")
    assert response.status_code == 403
    assert response.json()["code"] == "scope_forbidden"


def test_settle_route_previews_then_commits_and_matches_the_cli(todo, host_client):
    client = host_client("demo", "author")
    preview = client.post("/api/v1/turns/settle/", BODY, format="json")
    assert preview.status_code == 200
    assert preview.json()["status"] == "preview"
    assert not TurnSettlement.objects.exists()
    committed = client.post("/api/v1/turns/settle/", {**BODY, "execute": True}, format="json")
    assert committed.status_code == 201
    replayed = client.post("/api/v1/turns/settle/", {**BODY, "execute": True}, format="json")
    assert replayed.status_code == 200
    cli = run_cli("turn", "settle", "--goal-id", "demo", "--agent-id", "author", "--todo-id",
                  "t1", "--turn-instance-id", "turn-1", "--event-kind", "todo_completed",
                  "--execute")  # fmt: skip
    assert cli.json == replayed.json()
    assert replayed.json()["receipt"] == committed.json()["receipt"]


@pytest.mark.parametrize(
    ("body", "status", "code", "field"),
    [
        ({**BODY, "execute": "yes"}, 400, "invalid_argument", "execute"),
        ({**BODY, "event_kind": "todo_deleted"}, 400, "invalid_argument", "event_kind"),
        ({**BODY, "turn_instance_id": "a b"}, 400, "invalid_argument", "turn_instance_id"),
        ({**BODY, "profile": "x"}, 400, "invalid_argument", "profile"),
        ({k: v for k, v in BODY.items() if k != "todo_id"}, 400, "invalid_argument", "todo_id"),
        ({**BODY, "todo_id": "missing", "execute": True}, 404, "todo_not_found", "todo_id"),
        ({**BODY, "agent_id": "reviewer"}, 403, "scope_forbidden", None),
        ({**BODY, "goal_id": "other"}, 403, "scope_forbidden", None),
    ],
)
def test_settle_route_errors_are_envelopes(todo, other_goal, host_client, body, status, code,
                                           field):  # fmt: skip
    AgentFactory(goal=todo.goal, agent_id="reviewer")
    response = host_client("demo", "author").post("/api/v1/turns/settle/", body, format="json")
    assert response.status_code == status
    error = response.json()
    assert error["code"] == code
    if field:
        assert error["field"] == field
    assert not TurnSettlement.objects.exists()


def test_settle_route_conflict_is_409(todo, host_client):
    client = host_client("demo")
    client.post("/api/v1/turns/settle/", {**BODY, "execute": True}, format="json")
    response = client.post(
        "/api/v1/turns/settle/",
        {**BODY, "event_kind": "replan_recorded", "execute": True},
        format="json",
    )
    assert response.status_code == 409
    assert response.json()["code"] == "settlement_conflict"


def test_dispatch_and_intent_listings_are_scoped_to_the_tokens_goal(
    todo, other_goal, host_client, operator_client
):
    settle()
    settle(goal_id="other", todo_id="t1", event_kind="replan_recorded")
    host = host_client("demo")
    dispatches = host.get("/api/v1/hooks/dispatches/").json()["dispatches"]
    assert {d["goal_id"] for d in dispatches} == {"demo"}
    intents = host.get("/api/v1/hooks/intents/?status=pending").json()["intents"]
    assert {i["outbox"]["goal_id"] for i in intents} == {"demo"}
    assert host.get("/api/v1/hooks/intents/?goal_id=other").status_code == 403
    everything = operator_client.get("/api/v1/hooks/intents/").json()["intents"]
    assert {i["outbox"]["goal_id"] for i in everything} == {"demo", "other"}
    only_other = operator_client.get("/api/v1/hooks/dispatches/?goal_id=other").json()
    assert {d["goal_id"] for d in only_other["dispatches"]} == {"other"}


def test_intent_listing_filters_by_status(todo, host_client):
    settle()
    client = host_client("demo")
    assert len(client.get("/api/v1/hooks/intents/?status=pending").json()["intents"]) == 1
    assert client.get("/api/v1/hooks/intents/?status=executed").json()["intents"] == []
    bad = client.get("/api/v1/hooks/intents/?status=sent")
    assert bad.status_code == 400
    assert bad.json()["field"] == "status"
    assert client.get("/api/v1/hooks/dispatches/?limit=0").status_code == 400
    failing = client.get("/api/v1/hooks/dispatches/?failure_code=producer_failed").json()
    assert failing["dispatches"] == []


def test_agent_scoped_token_sees_only_its_agents_rows(todo, host_client):
    AgentFactory(goal=todo.goal, agent_id="reviewer")
    TodoFactory(goal=todo.goal, todo_id="t2")
    settle()
    settle(agent_id="reviewer", todo_id="t2", turn="turn-r", event_kind="replan_recorded")
    assert HookIntent.objects.count() == 2
    rows = host_client("demo", "reviewer").get("/api/v1/hooks/intents/").json()["intents"]
    assert [i["outbox"]["agent_id"] for i in rows] == ["reviewer"]


def test_registrations_route_hides_provider_paths_from_hosts(goal, host_client, operator_client):
    host = host_client("demo").get("/api/v1/hooks/registrations/").json()
    assert host["registrations"][0]["hook_id"] == "periodic_report.runtime_trigger"
    assert "provider" not in host["registrations"][0]
    operator = operator_client.get("/api/v1/hooks/registrations/").json()
    assert operator["registrations"][0]["provider"].endswith("PeriodicReportRuntimeTrigger")


def test_unauthenticated_requests_are_refused(api_client, todo):
    assert api_client.get("/api/v1/hooks/dispatches/").status_code == 401
    assert api_client.post("/api/v1/turns/settle/", BODY, format="json").status_code == 401
    assert Todo.objects.get().state == "open"


def test_openapi_schema_documents_the_hook_routes(api_client, db):
    schema = api_client.get("/api/schema/?format=json").json()
    paths = schema["paths"]
    assert "post" in paths["/api/v1/turns/settle/"]
    assert "get" in paths["/api/v1/hooks/dispatches/"]
    params = {p["name"] for p in paths["/api/v1/hooks/intents/"]["get"]["parameters"]}
    assert {"status", "goal_id", "limit", "cursor"} <= params
    assert {"get", "post"} <= set(paths["/api/v1/goals/{goal_id}/todos/"])
