"""Faults as tests: the PostgreSQL cluster stops during mixed API traffic.

A real server (``manage.py runserver`` in a subprocess, on the test database) takes
reads and conditional remembers from several clients; the cluster is stopped
(``pg_ctl stop -m fast``) in the middle, requests keep coming, then the cluster is
started again. Asserted: while it is down the API answers the structured 503 envelope
(``database_unavailable``) and the admin answers without a traceback; afterwards the
journal is gap-free, every acknowledged commit is in it and nothing was half-written
(subject rows match their operations, the scope revision is the last entry); and the
same server serves again after the restart.

Runs on the PostgreSQL leg only (``scripts/with-postgres.sh`` exports how to stop and
start its throwaway cluster); elsewhere it is skipped with the reason printed.
"""

import json
import os
import shlex
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.db import connection, connections

from loopx_site.core import services as core_services
from tests.helpers import database_url_for_subprocess

ROOT = Path(__file__).resolve().parents[2]
PG_CTL = os.environ.get("LOOPX_TEST_PG_CTL")
PGDATA = os.environ.get("LOOPX_TEST_PGDATA")
PGLOG = os.environ.get("LOOPX_TEST_PGLOG", "")
AS_PG = shlex.split(os.environ.get("LOOPX_TEST_PG_AS", ""))


def _skip_reason() -> str | None:
    if connection.vendor != "postgresql":
        return "fault test runs on the PostgreSQL leg (scripts/with-postgres.sh)"
    if not (PG_CTL and PGDATA):
        return "LOOPX_TEST_PG_CTL/LOOPX_TEST_PGDATA not set (run via scripts/with-postgres.sh)"
    return None


def _pg_ctl(*args: str) -> None:
    log = ["-l", PGLOG] if PGLOG and "restart" in args else []
    subprocess.run(
        [*AS_PG, PG_CTL, "-D", PGDATA, *log, *args],
        check=True,
        capture_output=True,
        timeout=120,
    )


def _request(base, method, path, token=None, body=None, cookie=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    req.add_header("Accept", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    if cookie:
        req.add_header("Cookie", cookie)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError as exc:  # connection reset while the server recovers
        return None, str(exc)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
@pytest.mark.exclusive  # stops the cluster every worker uses: runs alone
@pytest.mark.django_db(transaction=True)
def test_cluster_stop_under_traffic_gives_503_envelopes_nothing_half_written_and_recovery(
    django_user_model, tmp_path
):
    reason = _skip_reason()
    if reason:
        print(f"\nfault test skipped: {reason}", file=sys.stderr)
        pytest.skip(reason)
    from preferences.models import PreferenceOperation, PreferenceScope, PreferenceSubject

    core_services.register_goal(goal_id="fault", agent_ids=["a"], state_ref="s")
    token = core_services.create_token(goal_id="fault", agent_id="a").secret
    django_user_model.objects.create_superuser("op", password="pw-for-fault-test")

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "DATABASE_URL": database_url_for_subprocess(),
        "DEBUG": "false",
        "SECURE_SSL": "false",
        "SECRET_KEY": "fault-test-" + "x" * 40,
        "LOG_LEVEL": "ERROR",
        "CONN_MAX_AGE": "0",
        "LOOPX_THROTTLE_WRITE": "off",  # three clients write flat out with one token
    }
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "server.err", "w"),  # noqa: SIM115 - a pipe could fill up
    )
    down = False
    prefix = "/api/v1/goals/fault/agents/a/preferences/"
    acknowledged: set[str] = set()
    statuses: list[int | None] = []
    lock = threading.Lock()
    stop = threading.Event()
    try:
        deadline = time.monotonic() + 60
        while _request(base, "GET", prefix, token)[0] != 200:
            assert time.monotonic() < deadline, "server did not come up"
            time.sleep(0.2)
        # an admin session while the database is up
        cookie = _admin_login(base)

        def client(n: int) -> None:
            i = 0
            while not stop.is_set():
                i += 1
                code, text = _request(base, "GET", prefix, token)
                revision = None
                if code == 200:
                    revision = json.loads(text)["current"]["revision"]
                op = f"c{n}-{i}"
                body = {
                    "key": f"k{n}",
                    "statement": f"Statement {n}-{i}.",
                    "source_ref": f"src-{n}-{i}",
                    "source_quote": "Said so.",
                    "expected_revision": revision or "none",
                    "operation_id": op,
                    "execute": True,
                }
                code2, text2 = _request(base, "POST", prefix + "remember/", token, body)
                with lock:
                    statuses.extend([code, code2])
                    if code2 in (200, 201) and json.loads(text2)["status"] == "applied":
                        acknowledged.add(op)
                time.sleep(0.01)

        threads = [threading.Thread(target=client, args=(n,)) for n in range(3)]
        for t in threads:
            t.start()
        time.sleep(1.5)
        _pg_ctl("stop", "-m", "fast", "-w")  # the cluster goes away mid-traffic
        down = True
        time.sleep(1.5)

        down_api = _request(base, "GET", prefix, token)
        down_admin = _request(base, "GET", "/admin/preferences/preferencescope/", cookie=cookie)

        _pg_ctl("restart", "-w", "-t", "60")  # restart reuses the recorded options
        down = False
        time.sleep(1.0)
        stop.set()
        for t in threads:
            t.join(timeout=60)

        # 503 envelope from the API while down
        assert down_api[0] == 503, down_api
        envelope = json.loads(down_api[1])
        assert envelope["ok"] is False
        assert envelope["code"] == "database_unavailable"
        assert envelope["status"] == "unavailable"
        assert 503 in statuses
        # the admin: the small 503 page of EdgeErrorsMiddleware, no traceback
        assert down_admin[0] == 503, down_admin
        assert "Service unavailable (503)" in down_admin[1]
        assert "Traceback" not in down_admin[1]

        # recovery: the same server serves reads and writes again
        code, text = _request(base, "GET", prefix, token)
        assert code == 200, text
        body = {
            "key": "after",
            "statement": "After the restart.",
            "source_ref": "src-after",
            "source_quote": "Said so.",
            "expected_revision": json.loads(text)["current"]["revision"] or "none",
            "operation_id": "after-restart",
            "execute": True,
        }
        code, text = _request(base, "POST", prefix + "remember/", token, body)
        assert code == 201, text
        assert json.loads(text)["status"] == "applied"
        acknowledged.add("after-restart")
    finally:
        stop.set()
        if down:  # never leave the cluster stopped for the rest of the suite
            _pg_ctl("restart", "-w", "-t", "60")  # restart reuses the recorded options
        server.terminate()
        server.wait(timeout=20)
        connections.close_all()  # the test's own connection died with the cluster

    scope = PreferenceScope.objects.get(goal_ref="fault", agent_ref="a")
    journal = list(
        PreferenceOperation.objects.filter(scope=scope)
        .order_by("sequence")
        .values_list("sequence", "operation_id", "resulting_revision")
    )
    assert [s for s, _, _ in journal] == list(range(1, len(journal) + 1))  # gap-free
    assert [r for _, _, r in journal] == list(range(1, len(journal) + 1))
    assert scope.revision == len(journal)
    assert len(acknowledged) > 1
    assert acknowledged <= {op for _, op, _ in journal}  # no acknowledged commit lost
    for subject in PreferenceSubject.objects.filter(scope=scope).select_related("operation"):
        assert subject.operation.key == subject.key  # each subject row has its operation
        assert subject.revision == subject.operation.resulting_revision


def _admin_login(base: str) -> str:
    """Log in to the admin through the login form; returns the Cookie header."""
    import http.cookiejar
    import re

    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(base + "/admin/login/", timeout=30).read().decode()
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = urllib.parse.urlencode(
        {
            "csrfmiddlewaretoken": csrf,
            "username": "op",
            "password": "pw-for-fault-test",
            "next": "/admin/",
        }
    ).encode()
    req = urllib.request.Request(base + "/admin/login/", data=form, method="POST")
    req.add_header("Referer", base + "/admin/login/")
    opener.open(req, timeout=30).read()
    cookies = "; ".join(f"{c.name}={c.value}" for c in jar)
    assert "sessionid=" in cookies
    return cookies
