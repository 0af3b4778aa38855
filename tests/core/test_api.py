import pytest

from loopx_site.core import access, services
from loopx_site.core.models import Goal
from tests.factories import AgentFactory, GoalFactory


@pytest.fixture
def two_goals(db):
    GoalFactory(goal_id="demo")
    GoalFactory(goal_id="other")
    AgentFactory(goal=Goal.objects.get(goal_id="demo"), agent_id="author")


def test_unauthenticated_request_gets_401_envelope(api_client, two_goals):
    response = api_client.get("/api/v1/goals/demo/")
    assert response.status_code == 401
    assert response.json()["code"] == "not_authenticated"
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_unknown_token_gets_401(api_client, two_goals):
    api_client.credentials(HTTP_AUTHORIZATION="Bearer lxh_not-a-real-token")
    assert api_client.get("/api/v1/goals/demo/").status_code == 401


def test_token_reads_its_own_goal_and_is_refused_another(host_client, two_goals):
    client = host_client("demo")
    own = client.get("/api/v1/goals/demo/")
    assert own.status_code == 200
    assert own.json()["agents"] == ["author"]
    other = client.get("/api/v1/goals/other/")
    assert other.status_code == 403
    assert other.json() == {
        "ok": False,
        "schema_version": "loopx_error_v0",
        "status": "forbidden",
        "error": "Outside this token's scope.",
        "code": "scope_forbidden",
        "field": None,
        "details": {},
    }


def test_goal_list_shows_only_the_tokens_goal(host_client, two_goals):
    goals = host_client("demo").get("/api/v1/goals/").json()["goals"]
    assert [g["goal_id"] for g in goals] == ["demo"]


def test_revoked_token_is_refused(api_client, two_goals):
    issued = services.create_token(goal_id="demo")
    services.revoke_token(token=issued.token, operator=access.SHELL)
    api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.secret}")
    assert api_client.get("/api/v1/goals/demo/").status_code == 401


def test_operator_register_through_api_is_idempotent(operator_client, two_goals):
    body = {"goal_id": "demo", "agent_ids": ["author", "reviewer"], "execute": True}
    first = operator_client.post("/api/v1/goals/", body, format="json")
    second = operator_client.post("/api/v1/goals/", body, format="json")
    assert first.status_code == 200  # goal existed: not created
    assert first.json()["status"] == "registered"
    assert second.json()["status"] == "unchanged"
    assert second.json()["goal"]["agents"] == ["author", "reviewer"]


def test_agent_scoped_token_cannot_add_agents(host_client, two_goals):
    client = host_client("demo", "author")
    response = client.post(
        "/api/v1/goals/", {"goal_id": "demo", "agent_ids": ["x"], "execute": True}, format="json"
    )
    assert response.status_code == 403


def test_invalid_body_is_400_envelope_with_field(operator_client, two_goals):
    response = operator_client.post(
        "/api/v1/goals/", {"goal_id": "bad id", "agent_ids": ["a"]}, format="json"
    )
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid_argument"
    assert body["field"] == "goal_id"


def test_malformed_json_is_400_envelope(operator_client, two_goals):
    response = operator_client.generic(
        "POST", "/api/v1/goals/", "{not json", content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_json"


def test_unknown_goal_is_404_goal_not_registered(operator_client, two_goals):
    response = operator_client.get("/api/v1/goals/ghost/")
    assert response.status_code == 404
    assert response.json()["code"] == "goal_not_registered"


def test_operator_creates_goal_with_201(operator_client, db):
    response = operator_client.post(
        "/api/v1/goals/", {"goal_id": "new", "agent_ids": ["a"], "execute": True}, format="json"
    )
    assert response.status_code == 201
    assert Goal.objects.filter(goal_id="new").exists()


def test_operator_registration_without_execute_previews_and_writes_nothing(operator_client, db):
    response = operator_client.post(
        "/api/v1/goals/", {"goal_id": "new", "agent_ids": ["a"]}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["status"] == "preview"
    assert not Goal.objects.filter(goal_id="new").exists()


def test_openapi_schema_and_docs_are_served_offline(client, db):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    assert "/api/v1/goals/" in paths
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    html = docs.content.decode()
    assert "drf_spectacular_sidecar/swagger-ui-dist" in html  # assets shipped locally
    assert "cdn." not in html


def test_admin_pages_render_for_an_operator(admin_client, two_goals):
    for url in [
        "/admin/",
        "/admin/core/goal/",
        "/admin/core/agent/",
        "/admin/core/hosttoken/",
        f"/admin/core/goal/{Goal.objects.get(goal_id='demo').pk}/change/",
    ]:
        assert admin_client.get(url).status_code == 200, url
