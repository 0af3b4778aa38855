"""This service as a remote semantic preference provider: the endpoints the shipped
``loopx-memory-remote`` LoopX extension calls, and its entrypoint
``bin/loopx-memory-provider`` (run for real against a live server)."""

import http.server
import json
import os
import subprocess
import sys
import threading
import tomllib

import pytest

from loopx_site.core import services as core_services
from preferences import demo_recall
from preferences.recall import local_provider
from tests.helpers import ROOT

PROVIDER = "/api/v1/semantic-preferences/provider/"
DOCTOR = "/api/v1/semantic-preferences/provider/doctor/"
ENTRYPOINT = ROOT / "bin" / "loopx-memory-provider"
SURFACE = "issue_fix.pr_description"
REQUEST = {
    "schema_version": "semantic_preference_provider_request_v0",
    "surface": SURFACE,
    "query": "PR description structure and reviewer language preferences",
    "limit": 3,
    "context": {},
}


@pytest.fixture
def recall_goals(db):
    core_services.register_goal(goal_id="demo", agent_ids=["author"])
    core_services.register_goal(goal_id="other", agent_ids=["author"])
    demo_recall.load(log=lambda _: None)


def _local_answer() -> dict:
    data = json.dumps(REQUEST).encode()
    return local_provider.recall_response(
        **local_provider.parse_request(data, project=demo_recall.PROJECT)
    )


def test_a_host_token_gets_the_built_in_ranking_of_its_configs_project(recall_goals, host_client):
    response = host_client("demo").post(
        PROVIDER, {"config": "demo", "request": REQUEST}, format="json"
    )
    assert response.status_code == 200
    body = response.json()
    assert body["schema_version"] == "semantic_preference_provider_response_v0"
    assert body == _local_answer()
    assert [i["preference_ref"] for i in body["items"]]


def test_another_goals_config_answers_like_a_missing_one(recall_goals, host_client):
    other = host_client("other").post(
        PROVIDER, {"config": "demo", "request": REQUEST}, format="json"
    )
    missing = host_client("demo").post(
        PROVIDER, {"config": "nope", "request": REQUEST}, format="json"
    )
    assert other.status_code == missing.status_code == 404
    assert other.json()["code"] == missing.json()["code"] == "config_not_found"


def test_a_request_that_breaks_the_protocol_is_a_400_and_no_project_can_be_sent(
    recall_goals, host_client
):
    client = host_client("demo")
    bad = client.post(PROVIDER, {"config": "demo", "request": {"query": "x"}}, format="json")
    assert bad.status_code == 400
    assert bad.json()["code"] == "invalid_argument"
    # A project in the request is not the caller's to choose: the config's project ranks.
    sneaky = client.post(
        PROVIDER,
        {"config": "demo", "request": {**REQUEST, "project": "someone-else"}},
        format="json",
    )
    assert sneaky.status_code == 200
    assert sneaky.json() == _local_answer()


def test_provider_doctor_reports_the_configs_project(recall_goals, host_client):
    response = host_client("demo").post(DOCTOR, {"config": "demo"}, format="json")
    assert response.status_code == 200
    assert response.json()["healthy"] is True
    assert response.json()["schema_version"] == "semantic_preference_provider_doctor_v0"


def test_the_shipped_manifests_name_environment_variables_not_secrets():
    for mode in ("local", "remote"):
        path = ROOT / "preferences" / "extensions" / f"loopx-memory-{mode}.toml"
        manifest = tomllib.loads(path.read_text())
        assert manifest["schema_version"] == "loopx_extension_manifest_v0"
        assert manifest["runtime"]["entrypoint"] == "loopx-memory-provider"
        assert manifest["runtime"]["args"][0] == mode
        assert "lxh_" not in path.read_text()
    remote = tomllib.loads((ROOT / "preferences/extensions/loopx-memory-remote.toml").read_text())
    assert {"LOOPX_MEMORY_URL", "LOOPX_MEMORY_TOKEN", "LOOPX_MEMORY_CONFIG"} <= set(
        remote["runtime"]["args"]
    )


def _entrypoint(*args, env, stdin=None):
    return subprocess.run(
        [sys.executable, str(ENTRYPOINT), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={"PATH": os.environ.get("PATH", ""), **env},
        timeout=60,
        check=False,
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow  # runs the entrypoint in a Python subprocess
def test_the_remote_entrypoint_answers_from_a_live_server(live_server, recall_goals):
    token = core_services.create_token(goal_id="demo").secret
    env = {
        "LOOPX_MEMORY_URL": live_server.url,
        "LOOPX_MEMORY_TOKEN": token,
        "LOOPX_MEMORY_CONFIG": "demo",
    }
    doctor = _entrypoint("remote", "--doctor", env=env)
    assert doctor.returncode == 0, doctor.stderr
    answer = _entrypoint("remote", env=env, stdin=json.dumps(REQUEST))
    assert answer.returncode == 0, answer.stderr
    assert json.loads(answer.stdout) == _local_answer()
    refused = _entrypoint("remote", "--doctor", env={**env, "LOOPX_MEMORY_TOKEN": "lxh_nope"})
    assert refused.returncode == 2
    assert "401" in refused.stderr
    assert "lxh_nope" not in refused.stderr
    assert token not in doctor.stderr + answer.stderr + refused.stderr


@pytest.mark.slow  # runs the entrypoint in a Python subprocess
def test_the_remote_entrypoint_needs_its_environment_and_a_plain_origin():
    missing = _entrypoint("remote", "--doctor", env={})
    assert missing.returncode == 2
    assert "LOOPX_MEMORY_URL is not set" in missing.stderr
    creds = _entrypoint(
        "remote",
        "--doctor",
        env={
            "LOOPX_MEMORY_URL": "http://user:pw@127.0.0.1:9",
            "LOOPX_MEMORY_TOKEN": "t",
            "LOOPX_MEMORY_CONFIG": "c",
        },
    )
    assert creds.returncode == 2
    assert "pw" not in creds.stderr


@pytest.mark.slow  # runs the entrypoint in a Python subprocess
def test_the_remote_entrypoint_does_not_follow_redirects_with_the_token(tmp_path):
    """A server answering 302 to another origin gets no second request with the token."""
    seen: list[str] = []

    class Redirect(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            seen.append(self.headers.get("Authorization", ""))
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.1:{self.server.server_port}/elsewhere")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Redirect)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        result = _entrypoint(
            "remote",
            "--doctor",
            env={
                "LOOPX_MEMORY_URL": f"http://127.0.0.1:{server.server_port}",
                "LOOPX_MEMORY_TOKEN": "secret-token",
                "LOOPX_MEMORY_CONFIG": "demo",
            },
        )
    finally:
        server.shutdown()
    assert result.returncode == 2
    assert len(seen) == 1  # the redirect was not followed
    assert "secret-token" not in result.stderr
