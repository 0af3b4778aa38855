import json

import pytest

from tests.helpers import run_cli
from tests.preferences_recall.conftest import SURFACE, legacy_config, provider

pytestmark = pytest.mark.django_db

RECALL = "/api/v1/semantic-preferences/recall/"
DOCTOR = "/api/v1/semantic-preferences/doctor/"
RECEIPTS = "/api/v1/semantic-preferences/receipts/"
MAINTENANCE = "/api/v1/semantic-preferences/maintenance-receipts/"


@pytest.fixture
def client(goal, host_client):
    return host_client("demo")


def test_routes_require_authentication(api_client):
    for url in (RECALL, DOCTOR, RECEIPTS, MAINTENANCE):
        response = api_client.post(url, {}, format="json")
        assert response.status_code == 401
        # issue 34: one 401/403 document on every route (the edge's area, as /goals/)
        assert response.json()["schema_version"] == "loopx_error_v0"


def test_recall_previews_by_default_then_executes(client, bind, tmp_path):
    marker = tmp_path / "calls.txt"
    bind("cfg", provider("valid", "--marker", str(marker)))
    preview = client.post(RECALL, {"config": "cfg", "surface": SURFACE}, format="json")
    assert preview.status_code == 200
    assert preview.json()["status"] == "preview_ready"
    assert preview.json()["request"] == {
        "schema_version": "semantic_preference_provider_request_v0",
        "surface": SURFACE,
        "query": "PR description structure and reviewer language preferences",
        "limit": 5,
        "context": {},
    }
    assert not marker.exists()
    done = client.post(
        RECALL,
        {"config": "cfg", "surface": SURFACE, "context": {"repository": "o/r"}, "execute": True},
        format="json",
    )
    body = done.json()
    assert (done.status_code, body["status"]) == (200, "completed")
    assert len(body["items"]) == 3
    assert body["maintenance_guidance"]["corpus_ids"] == ["project_preferences"]
    assert body["corpus_inventory"][0]["corpus_id"] == "project_preferences"
    assert marker.read_text() == "called\n"


def test_the_api_never_loads_a_client_supplied_path(client, write_json):
    path = write_json("cfg.json", legacy_config(provider("valid")))
    response = client.post(RECALL, {"config": str(path), "surface": SURFACE}, format="json")
    assert response.status_code in (400, 404)
    assert response.json()["code"] in ("config_not_found", "invalid_argument")
    assert str(path) not in response.content.decode()


def test_unknown_config_is_404(client):
    response = client.post(RECALL, {"config": "nope", "surface": SURFACE}, format="json")
    assert response.status_code == 404
    assert response.json()["code"] == "config_not_found"


def test_fail_closed_provider_failure_is_503_with_the_failure_kind(client, bind):
    bind("closed", provider("nonzero_secret"), policy="fail_closed")
    response = client.post(
        RECALL, {"config": "closed", "surface": SURFACE, "execute": True}, format="json"
    )
    assert response.status_code == 503
    error = response.json()
    assert (error["code"], error["details"]["failure_kind"]) == ("provider_failed", "nonzero_exit")
    assert (error["ok"], error["status"], error["failure_kind"]) == (
        False,
        "invalid_request",
        "nonzero_exit",
    )
    assert "hunter2" not in response.content.decode()


def test_fail_open_provider_failure_is_200_provider_unavailable(client, bind):
    bind("open", provider("garbage"))
    response = client.post(
        RECALL, {"config": "open", "surface": SURFACE, "execute": True}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["failure_kind"] == "invalid_json"


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"config": "cfg", "surface": SURFACE, "context": {"Bad-Key": "x"}}, "invalid_context"),
        ({"config": "cfg", "surface": SURFACE, "context": ["k=v"]}, "invalid_context"),
        ({"config": "cfg", "surface": SURFACE, "context": {"k": 1}}, "invalid_context"),
        ({"config": "cfg", "surface": "content_ops.unknown"}, "unknown_surface"),
        ({"config": "cfg", "surface": "nodot"}, "invalid_argument"),
        ({"surface": SURFACE}, "invalid_argument"),
    ],
)
def test_bad_recall_requests_are_400_with_a_code(client, bind, body, code):
    bind("cfg", provider("valid"))
    response = client.post(RECALL, body, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == code


def test_doctor_route(client, bind, tmp_path):
    marker = tmp_path / "probe.txt"
    bind("cfg", provider("valid"), doctor=provider("doctor_ok", str(marker)))
    marker.unlink()  # the install probed once
    preview = client.post(DOCTOR, {"config": "cfg"}, format="json").json()
    assert (preview["schema_version"], preview["status"]) == (
        "semantic_preference_provider_doctor_v0",
        "probe_required",
    )
    assert not marker.exists()
    done = client.post(DOCTOR, {"config": "cfg", "execute": True}, format="json").json()
    assert (done["status"], done["verified"]) == ("ready", True)
    assert marker.exists()


def test_receipt_routes_match_the_cli(client):
    body = {
        "surface": SURFACE,
        "application_id": "pr-123",
        "outcome": "applied",
        "preference_refs": ["a", "b"],
        "artifact_ref": "https://github.com/o/r/pull/1",
    }
    api = client.post(RECEIPTS, body, format="json")
    cli = run_cli(
        "semantic_preference", "receipt", "--surface", SURFACE, "--application-id", "pr-123",
        "--outcome", "applied", "--preference-ref", "a", "--preference-ref", "b",
        "--artifact-ref", "https://github.com/o/r/pull/1",
    )  # fmt: skip
    assert api.status_code == 200
    assert api.json() == cli.json
    maintenance = {
        "trigger": "explicit_feedback",
        "outcome": "no_write_rationale",
        "corpus_ids": ["project_preferences"],
        "scope_refs": ["s"],
    }
    api = client.post(MAINTENANCE, maintenance, format="json")
    cli = run_cli(
        "semantic_preference", "maintenance-receipt", "--trigger", "explicit_feedback",
        "--outcome", "no_write_rationale", "--corpus-id", "project_preferences",
        "--scope-ref", "s",
    )  # fmt: skip
    assert api.json() == cli.json


def test_receipt_route_rejects_credentials_in_artifact_refs(client):
    body = {
        "surface": SURFACE,
        "application_id": "pr-1",
        "outcome": "applied",
        "preference_refs": ["a"],
        "artifact_ref": "https://user:secret@github.com/x",
    }
    response = client.post(RECEIPTS, body, format="json")
    assert response.status_code == 400
    assert "secret@" not in response.content.decode()


def test_recall_through_api_and_cli_agree(client, operator_client, bind):
    bind("cfg", provider("valid"))
    api = client.post(
        RECALL, {"config": "cfg", "surface": SURFACE, "execute": True}, format="json"
    ).json()
    operator = operator_client.post(
        RECALL, {"config": "cfg", "surface": SURFACE, "execute": True}, format="json"
    ).json()
    cli = run_cli(
        "semantic_preference", "recall", "--project", "loopx-demo", "--config", "cfg",
        "--surface", SURFACE, "--execute",
    )  # fmt: skip
    assert api == cli.json == operator


def test_openapi_schema_documents_the_routes(operator_client):
    response = operator_client.get("/api/schema/?format=json")
    paths = json.loads(response.content)["paths"]
    for url in (RECALL, DOCTOR, RECEIPTS, MAINTENANCE):
        assert url in paths
