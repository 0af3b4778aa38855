"""The same hooks document is the same bytes from ``manage.py`` and from the API: one
builder (``hooks.documents``), one encoding (``loopx_site.core.encoding``)."""

import pytest

from hooks import services
from tests.helpers import cli_document_bytes


@pytest.fixture
def todos(agent):
    for todo_id, title in (("t1", "Schreibe die Tests — bitte"), ("t2", '测试 "quoted"')):
        services.add_todo(goal_id="demo", todo_id=todo_id, title=title, execute=True)
    services.settle(
        goal_id="demo",
        agent_id="author",
        todo_id="t1",
        turn_instance_id="turn-1",
        event_kind="todo_completed",
        execute=True,
    )


def test_the_todo_list_is_the_same_bytes_on_the_cli_and_the_api(todos, operator_client):
    response = operator_client.get("/api/v1/goals/demo/todos/")
    assert response.status_code == 200
    assert cli_document_bytes("todo", "list", "--goal-id", "demo") == response.content
    assert "测试".encode() in response.content  # UTF-8 as is, no \u escapes


@pytest.mark.parametrize("state", ["open", "completed"])
def test_the_state_filter_is_the_same_on_the_cli_and_the_api(todos, operator_client, state):
    response = operator_client.get("/api/v1/goals/demo/todos/", {"state": state})
    assert response.status_code == 200
    assert [t["state"] for t in response.json()["todos"]] == [state]
    assert cli_document_bytes("todo", "list", "--goal-id", "demo", "--state", state) == (
        response.content
    )


def test_an_unknown_state_is_refused_by_the_api(todos, operator_client):
    response = operator_client.get("/api/v1/goals/demo/todos/", {"state": "done"})
    assert response.status_code == 400
    assert response.json()["field"] == "state"


def test_the_dispatch_journal_is_the_same_bytes_on_the_cli_and_the_api(
    todos, install, operator_client
):
    install("hooks.capabilities.periodic_report.PeriodicReportRuntimeTrigger")
    services.settle(
        goal_id="demo",
        agent_id="author",
        todo_id="t2",
        turn_instance_id="turn-2",
        event_kind="replan_recorded",
        execute=True,
    )
    response = operator_client.get("/api/v1/hooks/dispatches/", {"goal_id": "demo"})
    assert response.status_code == 200
    assert response.json()["dispatches"]
    assert cli_document_bytes("hooks", "dispatches", "--goal-id", "demo") == response.content
