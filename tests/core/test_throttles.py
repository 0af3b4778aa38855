"""Per-credential rate limits on every call that runs a provider, writes memory or
settles — counted once across server processes."""

import copy
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest
from django.conf import settings
from django.test import override_settings

from loopx_site.core.api import throttles
from loopx_site.core.models import Goal, ThrottleCounter
from tests.factories import AgentFactory, GoalFactory
from tests.helpers import ROOT

RECALL = "/api/v1/semantic-preferences/recall/"
DOCTOR = "/api/v1/semantic-preferences/doctor/"
INGEST = "/api/v1/reward-memory/ingest/"
TURN_RECALL = "/api/v1/turn-recall/"


def rates(**scopes):
    config = copy.deepcopy(settings.REST_FRAMEWORK)
    config["DEFAULT_THROTTLE_RATES"].update(scopes)
    return override_settings(REST_FRAMEWORK=config)


@pytest.fixture
def goals(db):
    demo = GoalFactory(goal_id="demo")
    AgentFactory(goal=demo, agent_id="author")
    GoalFactory(goal_id="other")
    return Goal.objects.all()


def test_settings_give_every_scope_a_rate_from_the_environment():
    configured = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    assert set(configured) == set(throttles.SCOPES)
    assert all(isinstance(rate, str) and "/" in rate for rate in configured.values())


REWARD = "/api/v1/reward-memory"
#: Every write that runs a provider, writes memory or settles, with its scope.
THROTTLED = [
    (RECALL, "recall", "semantic_preference"),
    (DOCTOR, "doctor", "semantic_preference"),
    (INGEST, "ingest", "reward_memory"),
    (TURN_RECALL, "turn_recall", "agent_turn_recall"),
    (f"{REWARD}/recall/", "reward_recall", "reward_memory"),
    (f"{REWARD}/hooks/issue_fix.patch_planning/", "reward_recall", "reward_memory"),
    (f"{REWARD}/candidates/review/", "review", "reward_memory"),
    (f"{REWARD}/reviews/rv-1/apply/", "review", "reward_memory"),
    (f"{REWARD}/records/rmr-1/revoke/", "review", "reward_memory"),
    (f"{REWARD}/records/rmr-1/supersede/", "review", "reward_memory"),
    (f"{REWARD}/application-receipts/", "write", "reward_memory"),
    ("/api/v1/turns/settle/", "settle", "post_writeback_hook"),
    ("/api/v1/goals/demo/todos/", "write", "post_writeback_hook"),
    ("/api/v1/goals/demo/agents/author/preferences/remember/", "write", "semantic_preference"),
    ("/api/v1/goals/demo/agents/author/preferences/retire/", "write", "semantic_preference"),
]


@pytest.mark.parametrize(("url", "scope", "area"), THROTTLED)
def test_a_token_over_its_budget_gets_the_429_envelope_with_retry_after(
    host_client, goals, url, scope, area
):
    client = host_client("demo")
    with rates(**{scope: "2/min"}):
        first = [client.post(url, {}, format="json").status_code for _ in range(2)]
        refused = client.post(url, {}, format="json")
    assert 429 not in first  # the budget's calls reach the view (they are answered on merit)
    assert refused.status_code == 429
    body = refused.json()
    assert body["code"] == "throttled"
    assert body["status"] == "throttled"
    assert body["schema_version"] == f"{area}_error_v0"
    assert int(refused["Retry-After"]) >= 1
    assert body["details"]["retry_after_seconds"] == int(refused["Retry-After"])


def test_reward_memory_recall_is_throttled_before_any_provider_runs(host_client, goals):
    from reward_memory.models import RecallReceipt

    client = host_client("demo", "author")
    body = {"schema_version": "reward_memory_recall_request_v0", "goal_id": "demo",
            "agent_id": "author", "execute": True}  # fmt: skip
    with rates(reward_recall="3/min"):
        codes = [client.post(f"{REWARD}/recall/", body, format="json").status_code
                 for _ in range(10)]  # fmt: skip
    assert codes.count(429) == 7
    assert RecallReceipt.objects.count() <= 3


def test_an_operator_goal_registration_is_throttled_per_account(operator_client, goals):
    body = {"goal_id": "demo", "agent_ids": ["author"]}
    with rates(write="2/min"):
        codes = [operator_client.post("/api/v1/goals/", body, format="json").status_code
                 for _ in range(3)]  # fmt: skip
        listing = [operator_client.get("/api/v1/goals/").status_code for _ in range(5)]
    assert codes == [200, 200, 429]
    assert listing == [200] * 5  # reads of a throttled view are never limited


def test_each_call_is_one_atomic_count_in_the_shared_table(host_client, goals):
    client = host_client("demo")
    with rates(doctor="2/min"):
        for _ in range(5):
            client.post(DOCTOR, {}, format="json")
    (row,) = ThrottleCounter.objects.all()
    assert row.bucket.startswith("doctor:token:")
    assert row.hits == 5  # refused calls are counted too: the window admits 2, exactly


def test_a_window_reopens_after_its_duration(db):
    store = throttles.DatabaseStore()
    assert store.hit("doctor:token:1", 60, 1000.0) == (1, 1060.0)
    assert store.hit("doctor:token:1", 60, 1030.0) == (2, 1060.0)
    assert store.hit("doctor:token:1", 60, 1060.0) == (1, 1120.0)


def test_the_cache_store_counts_with_add_and_incr(settings):
    settings.LOOPX_THROTTLE_STORE = "cache"
    store = throttles.store()
    assert isinstance(store, throttles.CacheStore)
    assert [store.hit("doctor:user:1", 60, 1000.0)[0] for _ in range(3)] == [1, 2, 3]


def test_a_cache_without_atomic_incr_is_refused_for_the_counters(settings):
    from django.core.exceptions import ImproperlyConfigured

    settings.LOOPX_THROTTLE_STORE = "cache"
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "t"}
    }
    with pytest.raises(ImproperlyConfigured):
        throttles.store()


@pytest.mark.parametrize(
    ("rate", "parsed"), [("60/min", (60, 60.0)), ("5/15m", (5, 900.0)), ("2/day", (2, 86400.0))]
)
def test_rates_parse(rate, parsed):
    assert throttles.parse_rate(rate) == parsed


def test_the_budget_belongs_to_the_token_not_the_address(host_client, goals):
    first_token = host_client("demo")
    second_token = host_client("demo")  # same Goal, same client address
    with rates(doctor="1/min"):
        assert first_token.post(DOCTOR, {}, format="json").status_code != 429
        assert first_token.post(DOCTOR, {}, format="json").status_code == 429
        assert second_token.post(DOCTOR, {}, format="json").status_code != 429


def test_scopes_are_separate_and_unthrottled_routes_are_untouched(host_client, goals):
    client = host_client("demo")
    with rates(doctor="1/min"):
        client.post(DOCTOR, {}, format="json")
        assert client.post(DOCTOR, {}, format="json").status_code == 429
        assert client.post(RECALL, {}, format="json").status_code != 429
        for _ in range(5):
            assert client.get("/api/v1/goals/demo/").status_code == 200


def test_off_disables_a_scope(host_client, goals):
    client = host_client("demo")
    with rates(doctor=None):
        codes = {client.post(DOCTOR, {}, format="json").status_code for _ in range(5)}
    assert 429 not in codes


def test_rates_come_from_the_environment():
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(
        DJANGO_SETTINGS_MODULE="loopx_site.settings",
        LOOPX_THROTTLE_RECALL="5/hour",
        LOOPX_THROTTLE_DOCTOR="off",
    )
    for scope in throttles.SCOPES:
        if scope not in ("recall", "doctor"):
            env.pop(f"LOOPX_THROTTLE_{scope.upper()}", None)
    code = (
        "import django, json; django.setup(); from django.conf import settings; "
        "print(json.dumps(settings.REST_FRAMEWORK['DEFAULT_THROTTLE_RATES']))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "recall": "5/hour",
        "doctor": None,
        "ingest": "120/min",
        "turn_recall": "120/min",
        "reward_recall": "60/min",
        "review": "60/min",
        "settle": "60/min",
        "write": "120/min",
    }


# -- several server processes: one budget ------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _manage(env, *argv) -> dict:
    result = subprocess.run(
        [sys.executable, "manage.py", *argv], cwd=ROOT, env=env,
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout) if result.stdout.strip().startswith("{") else {}


def _post(url: str, token: str) -> int:
    request = urllib.request.Request(
        url, data=b'{"config": "none-such"}', method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.slow
def test_two_server_processes_admit_exactly_the_configured_total(tmp_path):
    limit, sent = 10, 40
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(
        DATABASE_URL=f"sqlite:///{tmp_path / 'throttle.sqlite3'}",
        DJANGO_SETTINGS_MODULE="loopx_site.settings", DEBUG="false", SECURE_SSL="false",
        PYTHONPATH=str(ROOT), LOOPX_THROTTLE_DOCTOR=f"{limit}/hour", LOG_LEVEL="WARNING",
    )  # fmt: skip
    _manage(env, "migrate", "--noinput", "-v0")
    _manage(env, "goal", "register", "--goal-id", "demo", "--agent-id", "author", "--execute")
    token = _manage(env, "token", "create", "--goal-id", "demo", "--execute")["token"]
    # Two server processes (separate gunicorn instances on two ports, one worker each)
    # on one database, and every client alternating between them: each process surely
    # answers, so per-process counters would admit twice the limit.
    ports = [_free_port(), _free_port()]
    servers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "loopx_site.wsgi:application",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                "1",
                "--timeout",
                "60",
                "--access-logfile",
                "-",
                "--access-logformat",
                "pid=%(p)s status=%(s)s",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for port in ports
    ]
    outputs: list[str] = []
    try:
        for server, port in zip(servers, ports, strict=True):
            for _ in range(600):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert server.poll() is None, "gunicorn exited"
                    time.sleep(0.1)
        urls = [f"http://127.0.0.1:{port}{DOCTOR}" for port in ports]
        for url in urls:
            _post(url, "lxh_not-a-token")  # warm both servers up (401, never counted)
        codes: list[int] = []
        lock = threading.Lock()

        def fire(n, first):
            for i in range(n):
                code = _post(urls[(first + i) % 2], token)
                with lock:
                    codes.append(code)

        threads = [threading.Thread(target=fire, args=(sent // 8, t % 2)) for t in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    finally:
        for server in servers:
            server.terminate()
            outputs.append(server.communicate(timeout=60)[0].decode("utf-8", "replace"))
    assert len(codes) == sent
    assert all(code < 500 for code in codes), codes
    assert sum(code != 429 for code in codes) == limit  # the total, not per process
    assert codes.count(429) == sent - limit
    for output in outputs:  # both processes answered counted requests
        statuses = [line.split()[1] for line in output.splitlines() if line.startswith("pid=")]
        assert len(statuses) > sent // 4, output[-2000:]
