"""The embedded default has no broker; a broker and a Redis cache come from the
environment (read in a fresh process, as a server or worker reads them)."""

import json
import subprocess
import sys

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.slow  # starts a Python interpreter per test

SHOW = """
import json, django
django.setup()
from django.conf import settings
from loopx_site.celery import app
print(json.dumps({
    "cache": settings.CACHES["default"]["BACKEND"],
    "location": settings.CACHES["default"].get("LOCATION"),
    "broker": app.conf.broker_url,
    "acks_late": app.conf.task_acks_late,
    "reject_on_worker_lost": app.conf.task_reject_on_worker_lost,
    "prefetch": app.conf.worker_prefetch_multiplier,
    "serializer": app.conf.task_serializer,
    "accept": app.conf.accept_content,
    "scheduler": app.conf.beat_scheduler,
    "visibility": app.conf.broker_transport_options["visibility_timeout"],
}))
"""


def _settings(**env) -> dict:
    base = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "loopx_site.settings"}
    result = subprocess.run(
        [sys.executable, "-c", SHOW],
        cwd=ROOT,
        env={**base, "SECRET_KEY": "x" * 64, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_embedded_default_has_no_broker_and_a_local_cache():
    found = _settings()
    assert found["broker"] == "memory://"
    assert found["cache"] == "django.core.cache.backends.locmem.LocMemCache"
    assert (found["acks_late"], found["reject_on_worker_lost"], found["prefetch"]) == (
        True,
        True,
        1,
    )
    assert (found["serializer"], found["accept"]) == ("json", ["json"])
    assert found["scheduler"] == "django_celery_beat.schedulers:DatabaseScheduler"


def test_redis_urls_select_the_broker_and_djangos_redis_cache():
    found = _settings(
        LOOPX_CELERY_BROKER_URL="redis://127.0.0.1:6390/0",
        CACHE_URL="redis://127.0.0.1:6390/1",
        LOOPX_CELERY_VISIBILITY_TIMEOUT="1200",
    )
    assert found["broker"] == "redis://127.0.0.1:6390/0"
    assert found["cache"] == "django.core.cache.backends.redis.RedisCache"
    assert found["location"] == "redis://127.0.0.1:6390/1"
    assert found["visibility"] == 1200


def _imported(tmp_path, *argv: str) -> set[str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "SECRET_KEY": "x" * 64,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'cli.sqlite3'}",
    }
    run = [sys.executable, "-X", "importtime", "manage.py", *argv]
    result = subprocess.run(run, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
    return {
        line.split("|")[-1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    }


def test_a_host_cli_call_does_not_import_celery_but_serving_processes_have_the_schedules(
    tmp_path,
):
    host_call = _imported(tmp_path, "hooks", "registrations")
    assert "hooks.selectors" in host_call  # the measurement saw the command run
    assert not {m for m in host_call if m.split(".")[0] in ("celery", "kombu")}
    serving = _imported(tmp_path, "check")  # (importtime lists what the beat app imports)
    assert {"celery", "timezone_field"} <= {m.split(".")[0] for m in serving}


SWEEPS = """
import sys, django
sys.argv = ["manage.py", "hooks"]  # as a host's CLI call: no beat app
django.setup()
import hooks.background, hooks.services, reward_memory.background, reward_memory.services
import loopx_site.core.background
print(sorted(m for m in sys.modules if m.split(".")[0] in ("celery", "kombu")))
"""


def test_the_services_and_sweeps_tasks_call_never_import_celery():
    """Tasks are adapters: every rule runs the same from a command, the API or a task."""
    env = {"PATH": "/usr/bin:/bin", "SECRET_KEY": "x" * 64}
    env["DJANGO_SETTINGS_MODULE"] = "loopx_site.settings"
    run = [sys.executable, "-c", SWEEPS]
    result = subprocess.run(run, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "[]"
