"""The same registry document is the same bytes from ``manage.py`` and from the API:
one builder (``loopx_site.core.documents``), one encoding (``loopx_site.core.encoding``)."""

from loopx_site.core import services
from tests.helpers import cli_document_bytes


def test_the_goal_list_is_the_same_bytes_on_the_cli_and_the_api(db, operator_client):
    services.register_goal(
        goal_id="demo", agent_ids=["author", "reviewer"], state_ref="ziele/ü.json", execute=True
    )
    services.register_goal(goal_id="other", agent_ids=["solo"], execute=True)
    response = operator_client.get("/api/v1/goals/")
    assert response.status_code == 200
    assert [g["goal_id"] for g in response.json()["goals"]] == ["demo", "other"]
    assert cli_document_bytes("goal", "list") == response.content
    assert "ü".encode() in response.content  # UTF-8 as is, no \u escapes


def test_a_registration_preview_is_the_same_bytes_on_the_cli_and_the_api(db, operator_client):
    services.register_goal(goal_id="demo", agent_ids=["author"], execute=True)
    response = operator_client.post(
        "/api/v1/goals/",
        {"goal_id": "demo", "agent_ids": ["author", "reviewer"], "state_ref": "s/v2.json"},
        format="json",
    )
    assert response.status_code == 200
    assert response.json()["status"] == "preview"
    cli = cli_document_bytes(
        "goal", "register", "--goal-id", "demo", "--agent-id", "author", "--agent-id",
        "reviewer", "--state-ref", "s/v2.json",
    )  # fmt: skip
    assert cli == response.content
