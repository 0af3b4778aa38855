"""``bin/loopx-memory-provider`` on its own: the remote mode never repeats the server's
text and sends a token only over https or to loopback; the local doctor answers from
cheap readiness facts without starting Django; ``setup`` writes manifests that name the
entrypoint so real LoopX resolves it with no PATH step."""

import http.server
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
import tomllib

import pytest

from tests.helpers import ROOT

ENTRYPOINT = ROOT / "bin" / "loopx-memory-provider"
TOKEN = "lxh_hostile-echo-0123456789"

pytestmark = pytest.mark.slow


def _run(*args, env, stdin=None):
    return subprocess.run(
        [sys.executable, str(ENTRYPOINT), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={"PATH": os.environ.get("PATH", ""), **env},
        timeout=60,
        check=False,
    )


@pytest.fixture
def hostile_origin():
    """A server that answers every POST 403 with the Bearer token in every text field."""
    seen: list[str] = []

    class Echo(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            auth = self.headers.get("Authorization", "")
            seen.append(auth)
            body = json.dumps({"code": auth, "error": auth, "status": auth}).encode()
            self.send_response(403)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", seen
    server.shutdown()


@pytest.mark.privacy_exempt("a hostile origin echoes a fake token; the test proves it is dropped")
def test_the_remote_mode_never_prints_the_servers_text(hostile_origin):
    origin, seen = hostile_origin
    env = {"LOOPX_MEMORY_URL": origin, "LOOPX_MEMORY_TOKEN": TOKEN, "LOOPX_MEMORY_CONFIG": "c"}
    for args, stdin in ((["remote", "--doctor"], None), (["remote"], '{"query": "x"}')):
        result = _run(*args, env=env, stdin=stdin)
        assert result.returncode == 2
        assert TOKEN not in result.stderr + result.stdout
        assert "403 (error)" in result.stderr
    assert seen  # the server did get the token
    assert all(TOKEN in auth for auth in seen)


@pytest.mark.parametrize(
    "origin",
    ["http://example.invalid", "http://10.0.0.5:8000", "http://memory.internal/", "ftp://x"],
)
def test_the_remote_mode_refuses_plain_http_to_a_non_loopback_host(origin):
    env = {"LOOPX_MEMORY_URL": origin, "LOOPX_MEMORY_TOKEN": TOKEN, "LOOPX_MEMORY_CONFIG": "c"}
    result = _run("remote", "--doctor", env=env)
    assert result.returncode == 2
    assert "LOOPX_MEMORY_URL must" in result.stderr
    assert TOKEN not in result.stderr


@pytest.mark.parametrize("origin", ["http://127.0.0.1:9", "http://localhost:9", "http://[::1]:9"])
def test_plain_http_to_loopback_is_allowed_and_fails_only_as_unreachable(origin):
    env = {"LOOPX_MEMORY_URL": origin, "LOOPX_MEMORY_TOKEN": TOKEN, "LOOPX_MEMORY_CONFIG": "c"}
    result = _run("remote", "--doctor", env=env)
    assert "must use https" not in result.stderr
    assert result.returncode == 1
    assert "server unreachable" in result.stderr


def _migrated_sqlite(path):
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE django_migrations (id integer primary key)")


def test_the_local_doctor_answers_from_cheap_facts_without_starting_django(tmp_path):
    db = tmp_path / "db.sqlite3"
    _migrated_sqlite(db)
    marker = tmp_path / "python-was-run"
    fake_python = tmp_path / "python"
    fake_python.write_text(f"#!/bin/sh\ntouch {marker}\nexit 3\n")
    fake_python.chmod(0o755)
    env = {
        "LOOPX_MEMORY_PROJECT": "loopx-demo",
        "LOOPX_MEMORY_PYTHON": str(fake_python),
        "DATABASE_URL": f"sqlite:///{db}",
    }
    started = time.monotonic()
    ready = _run("local", "--doctor", env=env)
    seconds = time.monotonic() - started
    assert ready.returncode == 0, ready.stderr
    assert not marker.exists()  # neither Django nor the checkout's interpreter ran
    # The interpreter start-up dominates; Django's set-up is what LoopX's 30 s timeout
    # could not afford on a loaded machine.
    assert seconds < 15, seconds
    missing = _run("local", "--doctor", env={**env, "DATABASE_URL": f"sqlite:///{db}.nope"})
    assert missing.returncode == 1
    assert "does not exist" in missing.stderr
    empty = tmp_path / "empty.sqlite3"
    sqlite3.connect(empty).close()
    unmigrated = _run("local", "--doctor", env={**env, "DATABASE_URL": f"sqlite:///{empty}"})
    assert unmigrated.returncode == 1
    assert "not migrated" in unmigrated.stderr
    no_project = _run("local", "--doctor", env={**env, "LOOPX_MEMORY_PROJECT": ""})
    assert no_project.returncode == 2


def test_the_local_doctor_checks_that_postgresql_accepts_connections(tmp_path):
    env = {
        "LOOPX_MEMORY_PROJECT": "loopx-demo",
        "LOOPX_MEMORY_PYTHON": sys.executable,
        "DATABASE_URL": "postgres://u@127.0.0.1:9/db",
    }
    result = _run("local", "--doctor", env=env)
    assert result.returncode == 1
    assert "does not accept connections" in result.stderr


def test_setup_links_the_console_script_and_writes_manifests_naming_it():
    result = _run("setup", "--quiet", env={})
    assert result.returncode == 0, result.stderr
    link = ROOT / ".venv" / "bin" / "loopx-memory-provider"
    assert link.resolve() == ENTRYPOINT.resolve()
    for mode in ("local", "remote"):
        generated = ROOT / ".local" / "extensions" / f"loopx-memory-{mode}.toml"
        manifest = tomllib.loads(generated.read_text())
        shipped = tomllib.loads(
            (ROOT / "preferences" / "extensions" / f"loopx-memory-{mode}.toml").read_text()
        )
        assert manifest["runtime"]["entrypoint"] == str(link)
        assert os.access(manifest["runtime"]["entrypoint"], os.X_OK)
        assert {**manifest["runtime"], "entrypoint": "loopx-memory-provider"} == shipped["runtime"]
        assert manifest["id"] == shipped["id"] == f"loopx-memory-{mode}"
    printed = _run("manifest", "remote", env={})
    assert tomllib.loads(printed.stdout)["runtime"]["entrypoint"] == str(link)
