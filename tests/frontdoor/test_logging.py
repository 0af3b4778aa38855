"""One structured line per event, with request ids; no tracebacks for expected 4xx."""

import io
import json
import logging
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings

from loopx_site.core.logging import JsonFormatter, KeyValueFormatter, RequestIdFilter

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def log_lines():
    """Everything the request and Django loggers emit, through our formatter."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(KeyValueFormatter())
    handler.addFilter(RequestIdFilter())
    loggers = [logging.getLogger(n) for n in ("loopx.request", "django.request")]
    for lg in loggers:
        lg.addHandler(handler)
    yield lambda: [line for line in stream.getvalue().splitlines() if line]
    for lg in loggers:
        lg.removeHandler(handler)


def test_admin_permission_denied_is_one_line_without_traceback(db, client, log_lines):
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user("clerk", password="pw-for-tests-only")
    user.is_staff = True
    user.save()
    client.force_login(user)
    response = client.get("/admin/auth/user/", HTTP_X_REQUEST_ID="req-admin-0001")
    assert response.status_code == 403
    assert response["X-Request-ID"] == "req-admin-0001"
    lines = log_lines()
    assert len(lines) == 1, lines
    assert "Traceback" not in lines[0]
    assert "request_id=req-admin-0001" in lines[0]
    assert "status=403" in lines[0]
    assert "level=WARNING" in lines[0]


def test_api_401_is_one_line_and_gets_a_fresh_request_id(db, api_client, log_lines):
    response = api_client.get("/api/v1/goals/demo/", HTTP_X_REQUEST_ID="bad id with spaces")
    assert response.status_code in (401, 403)
    request_id = response["X-Request-ID"]
    assert request_id != "bad id with spaces"
    assert len(request_id) == 16
    lines = log_lines()
    assert len(lines) == 1, lines
    assert f"request_id={request_id}" in lines[0]
    assert "route=" in lines[0]
    assert "/api/v1/goals/demo/" not in lines[0]  # the route pattern, not the raw path


def test_a_server_error_keeps_its_traceback_on_one_line():
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord("django.request", 40, "x", 1, "Internal", None, sys.exc_info())
    record.status_code = 500
    line = KeyValueFormatter().format(record)
    assert "\n" not in line
    assert "exc_type=ValueError" in line
    assert "Traceback" in line
    doc = json.loads(JsonFormatter().format(record))
    assert doc["exc_type"] == "ValueError"


def test_log_level_comes_from_the_environment():
    assert settings.LOGGING["loggers"]["loopx"]["level"] == settings.LOG_LEVEL
    assert settings.LOGGING["root"]["level"] == settings.LOG_LEVEL
    assert settings.MIDDLEWARE[0] == "loopx_site.core.logging.RequestIdMiddleware"


@pytest.mark.slow
def test_development_server_logs_one_line_per_request_and_honours_log_level(tmp_path):
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "DEBUG": "true",
        "LOG_LEVEL": "WARNING",
        "LOG_FORMAT": "json",
    }
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=120)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    err = open(tmp_path / "server.err", "w+")  # noqa: SIM115
    server = subprocess.Popen(
        [*manage, "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=err,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                urllib.request.urlopen(base + "/api/schema/", timeout=2).read()
                break
            except OSError:
                time.sleep(0.2)
        for path in ("/api/v1/goals/demo/", "/api/v1/goals/other/"):
            with pytest.raises(urllib.error.HTTPError) as exc:
                urllib.request.urlopen(base + path, timeout=5)
            assert exc.value.code in (401, 403)
    finally:
        server.terminate()
        server.wait(timeout=10)
    err.seek(0)
    lines = [line for line in err.read().splitlines() if line.startswith("{")]
    records = [json.loads(line) for line in lines]
    # LOG_LEVEL=WARNING: the 200 schema fetch is not logged; each 4xx exactly once
    requests = [r for r in records if r.get("event") == "request"]
    assert [r["status"] for r in requests] in ([401, 401], [403, 403]), lines
    assert all(r["request_id"] != "-" for r in requests)
    assert not any("traceback" in r for r in records)
    assert not [r for r in records if r["logger"] in ("django.request", "django.server")]
