"""A CLI call imports only what it uses: no API schema machinery, no database driver it
does not talk to, no admin registrations (those load with the URLconf and in web or
check processes). Checked by the imports a real ``manage.py`` process makes."""

import os
import subprocess
import sys

import pytest

from loopx_site.core.apps import is_management_command_without_admin
from tests.helpers import ROOT

pytestmark = pytest.mark.slow  # times command start-up in fresh interpreters


def _imports_of(tmp_path, *argv: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    env = {
        "PATH": os.environ["PATH"],
        "DEBUG": "false",
        "SECRET_KEY": "x" * 64,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'cli.sqlite3'}",
    }
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    # every module loaded by the end of the call, however it was imported (``-X
    # importtime`` lists only import statements, not ``importlib.import_module``)
    report = (
        "import atexit, runpy, sys; "
        "atexit.register(lambda: print('\\n'.join('module: ' + m for m in sys.modules), "
        "file=sys.stderr)); "
        "sys.argv = sys.argv[1:]; runpy.run_path('manage.py', run_name='__main__')"
    )
    result = subprocess.run(
        [sys.executable, "-c", report, "manage.py", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    modules = {
        line.removeprefix("module: ").strip()
        for line in result.stderr.splitlines()
        if line.startswith("module: ")
    }
    return result, modules


def test_agent_read_cli_skips_schema_driver_admin_and_recall_runtime(tmp_path):
    result, modules = _imports_of(
        tmp_path, "semantic_preference", "agent", "read", "--goal-id", "g", "--agent-id", "a"
    )
    assert result.returncode == 2  # unknown Goal: a structured error, after a real lookup
    assert '"code"' in result.stdout
    assert "preferences.cli.agent.read" in modules  # the measurement saw the command itself
    heavy = {
        "drf_spectacular.plumbing",
        "rest_framework.fields",
        "psycopg",
        "django.contrib.postgres",
        "loopx_site.urls",
        "preferences.admin_recall",  # imported by preferences.admin
        "loopx_site.core.admin_base",  # imported by every app's admin
        "preferences.services.recall",
        "loopx_site.core.sandbox",
        "django.contrib.admin",  # a web-only app: not installed in a host's CLI call
        "django.contrib.sessions.models",
        "preferences.services.journal",  # the write path: a read never loads it
    }
    assert not heavy & modules, sorted(heavy & modules)


def test_a_write_subcommand_still_loads_its_service(tmp_path):
    result, modules = _imports_of(
        tmp_path, "semantic_preference", "agent", "remember", "--goal-id", "g", "--agent-id",
        "a", "--key", "k.k", "--statement", "s", "--source-ref", "r", "--source-quote", "q",
        "--expected-revision", "none", "--operation-id", "op-1",
    )  # fmt: skip
    assert result.returncode == 2  # unknown Goal, found by the service itself
    assert "preferences.services.journal" in modules


def test_check_still_loads_every_admin_registration(tmp_path):
    result, modules = _imports_of(tmp_path, "check")
    assert result.returncode == 0, result.stdout + result.stderr
    # (-X importtime does not list the admin modules themselves; their imports show.)
    assert {"preferences.admin_recall", "loopx_site.core.admin_base"} <= modules


@pytest.mark.parametrize(
    ("argv", "skips"),
    [
        (["manage.py", "semantic_preference", "agent", "read"], True),
        (["/srv/app/manage.py", "remember", "--goal-id", "g"], True),
        (["manage.py", "runserver"], False),
        (["manage.py", "check", "--deploy"], False),
        (["manage.py", "test"], False),
        (["/usr/bin/gunicorn", "loopx_site.wsgi:application"], False),
        (["pytest", "-q"], False),
        (["manage.py"], False),
    ],
)
def test_only_non_web_management_commands_skip_admin_discovery(argv, skips):
    assert is_management_command_without_admin(argv) is skips


APPS = """
import sys
sys.argv = ["manage.py", *sys.argv[1:]]
from django.conf import settings
print(",".join(settings.INSTALLED_APPS))
"""


@pytest.mark.parametrize(
    ("argv", "web_apps"),
    [
        (["semantic_preference", "agent", "read"], False),
        (["hooks", "registrations"], False),
        (["mcp"], True),  # the long-running MCP server keeps the full set
        (["loopx_demo"], True),
        (["migrate"], True),  # Django's own commands are unchanged
        (["check"], True),
    ],
)
def test_only_the_apps_own_cli_calls_go_without_the_web_only_apps(argv, web_apps):
    env = {"PATH": os.environ["PATH"], "SECRET_KEY": "x" * 64}
    env["DJANGO_SETTINGS_MODULE"] = "loopx_site.settings"
    run = [sys.executable, "-c", APPS, *argv]
    result = subprocess.run(run, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    installed = set(result.stdout.strip().splitlines()[-1].split(","))
    assert {"django.contrib.auth", "django.contrib.contenttypes", "hooks"} <= installed
    web_only = {"loopx_site.core.admin_apps.LoopxAdminConfig", "rest_framework"}
    assert (web_only <= installed) is web_apps
    assert (not web_only & installed) is not web_apps
