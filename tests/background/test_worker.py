"""With a real ``redis-server`` (loopback, throwaway) and a real ``celery worker``
process: a task sent through the broker runs on the worker against this test's
database, once; and throttle counters in Redis are one limit across processes.
Skipped, with the reason, where ``redis-server`` is not installed."""

import json
import shutil
import socket
import subprocess
import sys
import time

import pytest
from celery import Celery

from hooks.models import HookPhaseCheckpoint
from loopx_site.core.models import BackgroundRun
from tests.background.conftest import crashed_settles, seed_goal
from tests.helpers import ROOT, subprocess_env

REDIS_SERVER = shutil.which("redis-server")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        REDIS_SERVER is None,
        reason="redis-server is not installed (Debian: apt-get install -y redis-server)",
    ),
]


@pytest.fixture(autouse=True)
def frozen_clock():
    """Real time here: the worker process reads its own clock."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.fixture
def redis_url(tmp_path):
    import redis

    port = _free_port()
    proc = subprocess.Popen(
        [
            REDIS_SERVER,
            "--bind",
            "127.0.0.1",
            "--port",
            str(port),
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(host="127.0.0.1", port=port)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            break
        except redis.ConnectionError:
            if time.monotonic() > deadline or proc.poll() is not None:
                _stop(proc)
                pytest.fail("redis-server did not start")
            time.sleep(0.05)
    yield f"redis://127.0.0.1:{port}/0"
    client.close()
    _stop(proc)


@pytest.fixture
def worker(redis_url, tmp_path):
    log = (tmp_path / "worker.log").open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "loopx_site.celery",
            "worker",
            "--pool",
            "solo",
            "--queues",
            "loopx",
            "--loglevel",
            "INFO",
            "--hostname",
            "t1@%h",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        cwd=ROOT,
        env=subprocess_env(LOOPX_CELERY_BROKER_URL=redis_url),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    yield proc
    _stop(proc)
    log.close()


def _send(redis_url: str, name: str, **kwargs) -> None:
    """What beat does: publish the task by name on the loopx queue."""
    sender = Celery("sender", broker=redis_url)
    sender.conf.task_serializer = "json"
    try:
        sender.send_task(name, kwargs=kwargs, queue="loopx")
    finally:
        sender.close()


def _wait_for_runs(n: int, timeout: float = 90) -> list[BackgroundRun]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = list(BackgroundRun.objects.exclude(outcome="running").order_by("pk"))
        if len(runs) >= n:
            return runs
        time.sleep(0.2)
    pytest.fail(f"the worker finished {BackgroundRun.objects.count()} of {n} runs")


def test_a_task_sent_through_redis_runs_on_a_real_worker_once(redis_url, worker, tmp_path):
    seed_goal()
    crashed_settles(1)
    _send(redis_url, "loopx.hooks.recover_dispatches", grace_seconds=0)
    (first,) = _wait_for_runs(1)
    assert (first.outcome, first.counts["claimed"]) == ("ok", 1), (
        tmp_path / "worker.log"
    ).read_text()[-2000:]
    assert first.task_id  # Celery's id of the delivered message
    assert first.worker.endswith(f":{worker.pid}")
    assert HookPhaseCheckpoint.objects.count() == 1
    _send(redis_url, "loopx.hooks.recover_dispatches", grace_seconds=0)
    second = _wait_for_runs(2)[1]
    assert (second.outcome, second.counts["candidates"], second.counts["claimed"]) == ("ok", 0, 0)
    assert HookPhaseCheckpoint.objects.count() == 1


HITS = """
import json, time, django
django.setup()
from loopx_site.core.api import throttles
store = throttles.store()
print(json.dumps([store.hit("bucket", 60, time.time())[0] for _ in range(25)]))
"""


def test_throttle_counters_in_redis_are_one_count_across_processes(redis_url):
    import redis

    env = subprocess_env(CACHE_URL=redis_url, LOOPX_THROTTLE_STORE="cache")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", HITS], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    seen = []
    for proc in procs:
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0
        seen += json.loads(out)
    assert sorted(seen) == list(range(1, 51))  # every hit counted once, none lost
    client = redis.Redis.from_url(redis_url)
    try:
        (key,) = [k for k in client.keys("*loopx_throttle:bucket") if not k.endswith(b":end")]
        assert 0 < client.ttl(key) <= 60  # the window ends
    finally:
        client.close()
