"""API edges from issue 33: a path without its trailing slash is served (never a 301 to
an HTML page that drops a POST body), and request bodies are strict — an unknown field
or a number for the opaque ``expected_revision`` is ``invalid_argument`` naming it."""

import pytest

from loopx_site.core import services as core_services
from preferences.models import PreferenceSubject

BASE = "/api/v1/goals/demo/agents/author/preferences/"
REMEMBER = {
    "key": "review.collaboration",
    "statement": "Ask the designated reviewer before merging.",
    "source_ref": "owner-message-1",
    "source_quote": "Use the designated reviewer.",
    "expected_revision": None,
    "operation_id": "preference-1",
}


@pytest.fixture
def author(db, host_client):
    core_services.register_goal(goal_id="demo", agent_ids=["author"], state_ref="goals/demo/s.json")
    return host_client("demo", "author")


def test_a_post_without_the_trailing_slash_keeps_its_body(author):
    response = author.post(f"{BASE}remember", {**REMEMBER, "execute": True}, format="json")
    assert response.status_code == 201
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["status"] == "applied"
    assert PreferenceSubject.objects.count() == 1


@pytest.mark.parametrize("debug", [False, True])
def test_a_get_without_the_trailing_slash_answers_json(author, settings, debug):
    settings.DEBUG = debug
    response = author.get("/api/v1/goals")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["goals"][0]["goal_id"] == "demo"


def test_an_unknown_path_without_a_slash_is_still_the_json_404(author):
    response = author.get("/api/v1/no-such-thing")
    assert (response.status_code, response.json()["code"]) == (404, "route_not_found")


def test_an_unknown_body_field_is_invalid_argument_naming_it(author):
    body = {**REMEMBER, "exectue": True}  # a typo must not silently become a preview
    response = author.post(f"{BASE}remember/", body, format="json")
    assert response.status_code == 400
    payload = response.json()
    assert (payload["code"], payload["field"]) == ("invalid_argument", "exectue")
    assert "execute" in payload["error"]  # the accepted fields are listed
    assert PreferenceSubject.objects.count() == 0


@pytest.mark.parametrize(
    "path",
    ["/api/v1/goals/demo/todos/", "/api/v1/reward-memory/ingest/", "/api/v1/turn-recall/"],
)
def test_unknown_fields_are_refused_by_every_app_s_input(author, path):
    response = author.post(path, {"surplus_field": 1}, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_argument"
    assert response.json()["field"] == "surplus_field"


@pytest.mark.parametrize("revision", [0, 1, 1.5, True, ["1"]])
def test_a_non_string_expected_revision_is_invalid_argument(author, revision):
    body = {**REMEMBER, "expected_revision": revision, "execute": True}
    response = author.post(f"{BASE}remember/", body, format="json")
    assert response.status_code == 400
    payload = response.json()
    assert (payload["code"], payload["field"]) == ("invalid_argument", "expected_revision")
    assert PreferenceSubject.objects.count() == 0


def test_the_string_revision_read_back_is_accepted(author):
    author.post(f"{BASE}remember/", {**REMEMBER, "execute": True}, format="json")
    revision = author.get(BASE).json()["current"]["revision"]
    assert isinstance(revision, str)
    body = {**REMEMBER, "operation_id": "p2", "statement": "Ask twice.", "execute": True}
    response = author.post(
        f"{BASE}remember/", {**body, "expected_revision": revision}, format="json"
    )
    assert response.status_code == 201


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/goals/demo/",
        "/api/v1/goals/demo/agents/author/preferences/",
        "/api/v1/reward-memory/corpora/",
        "/api/v1/hooks/dispatches/",
    ],
)
def test_401_and_403_are_one_document_on_every_route(author, host_client, api_client, path):
    unauthenticated = api_client.get(path)
    assert unauthenticated.status_code == 401
    assert unauthenticated.json()["schema_version"] == "loopx_error_v0"
    core_services.register_goal(goal_id="other", agent_ids=["x"], execute=True)
    outside = host_client("other", "x").get(path)
    if outside.status_code == 403:
        assert outside.json()["schema_version"] == "loopx_error_v0"
        assert outside.json()["code"] == "scope_forbidden"
