"""Bad input at the edge answers the envelope (or a small page), never a traceback."""

import json
import logging
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from django.test import override_settings

from tests.helpers import ROOT

REMEMBER = "/api/v1/goals/demo/agents/author/preferences/remember/"


def deep_json(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [65, 1000, 100_000])
def test_deeply_nested_body_is_invalid_json_on_every_parser_path(
    host_client, operator_client, demo_goal, depth
):
    for client, url in (
        (operator_client, "/api/v1/goals/"),
        (host_client("demo"), REMEMBER),
        (host_client("demo"), "/api/v1/reward-memory/recall/"),
    ):
        response = client.generic("POST", url, deep_json(depth), content_type="application/json")
        assert response.status_code == 400, url
        body = response.json()
        assert body["code"] == "invalid_json"
        assert "nests deeper than 64" in body["error"]


def test_moderately_nested_body_still_parses(operator_client, demo_goal):
    body = {"goal_id": "demo", "agent_ids": ["author"], "extra": json.loads(deep_json(30))}
    response = operator_client.post("/api/v1/goals/", body, format="json")
    # parsed (not invalid_json); then refused by the strict input: a field it does not take
    assert response.status_code == 400
    assert (response.json()["code"], response.json()["field"]) == ("invalid_argument", "extra")


def test_nan_is_not_json(operator_client, demo_goal):
    response = operator_client.generic(
        "POST", "/api/v1/goals/", '{"goal_id": NaN}', content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_json"


def test_five_megabyte_body_is_413_envelope_and_logs_no_traceback(host_client, demo_goal, caplog):
    caplog.set_level(logging.DEBUG)
    body = json.dumps({"key": "k", "statement": "x" * (5 * 1024 * 1024)})
    response = host_client("demo").generic("POST", REMEMBER, body, content_type="application/json")
    assert response.status_code == 413
    payload = response.json()
    assert payload["code"] == "payload_too_large"
    assert payload["ok"] is False
    assert not [r for r in caplog.records if r.exc_info]


def test_five_megabyte_admin_form_is_413_page_without_traceback(client, db, caplog):
    caplog.set_level(logging.DEBUG)
    response = client.generic(
        "POST",
        "/admin/login/",
        "username=" + "x" * (5 * 1024 * 1024),
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 413
    assert not [r for r in caplog.records if r.exc_info]


@pytest.mark.parametrize("debug", [False, True])
def test_unknown_api_path_is_the_json_404_envelope(host_client, demo_goal, debug):
    with override_settings(DEBUG=debug):
        response = host_client("demo").get("/api/v1/no-such-route/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["code"] == "route_not_found"
    assert response.json()["schema_version"] == "loopx_error_v0"


def test_unknown_non_api_path_keeps_the_html_page(client, db):
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    assert not response["Content-Type"].startswith("application/json")


# -- database down: a real server process whose database cannot be reached -------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str, headers=None):
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


@pytest.fixture
def server_without_database():
    port = _free_port()
    dead_port = _free_port()  # nothing listens there
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(
        DATABASE_URL=f"postgres://nobody@127.0.0.1:{dead_port}/gone",
        DJANGO_SETTINGS_MODULE="loopx_site.settings",
        DEBUG="false",
        SECURE_SSL="false",
        PYTHONPATH=str(ROOT),
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "loopx_site.wsgi:application",
         "--bind", f"127.0.0.1:{port}", "--workers", "1", "--timeout", "60"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.1)
    try:
        yield base
    finally:
        proc.terminate()
        output = proc.communicate(timeout=30)[0].decode("utf-8", "replace")
        server_without_database.output = output


@pytest.mark.slow
def test_database_down_gives_503_page_for_admin_and_envelope_for_api(server_without_database):
    base = server_without_database
    # An operator's browser holds a session: reading it needs the database.
    session = {"Cookie": "sessionid=an-operator-session-key"}
    for path in ("/admin/", "/admin/core/goal/"):
        status, headers, body = _get(f"{base}{path}", session)
        assert status == 503, path
        assert headers["Content-Type"].startswith("text/html")
        assert b"Service unavailable" in body
        assert b"Traceback" not in body
    status, headers, body = _get(f"{base}/api/v1/goals/", {"Authorization": "Bearer lxh_anything"})
    assert status == 503
    payload = json.loads(body)
    assert payload["code"] == "database_unavailable"
    assert payload["status"] == "unavailable"


def test_nul_character_reaching_a_query_is_bad_input_not_an_outage(host_client, demo_goal):
    """PostgreSQL refuses NUL in text (DataError): that is a 4xx, never the 503 envelope."""
    response = host_client("demo").post(
        "/api/v1/reward-memory/application-receipts/", {"recall_id": "rmc_\x00"}, format="json"
    )
    assert 400 <= response.status_code < 500
    assert response.json()["code"] != "database_unavailable"
