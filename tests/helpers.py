"""Test helpers: run commands as a user would, and point subprocesses at the test DB."""

import contextlib
import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from unittest import mock
from urllib.parse import quote

from django.core.management import ManagementUtility
from django.db import connection, connections

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    @property
    def json(self):
        return json.loads(self.stdout)


def run_cli(*argv: str, stdin: str | None = None) -> CliResult:
    """Run ``manage.py <argv>`` in-process exactly as the shell would (exit code included).

    The command's closing of database connections is suppressed: in-process, the
    connection belongs to the test's transaction.
    """
    out, err = io.StringIO(), io.StringIO()
    code = 0
    old_stdin = sys.stdin
    if stdin is not None:
        sys.stdin = io.StringIO(stdin)
    try:
        with (
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
            mock.patch.object(connections, "close_all"),
        ):
            try:
                ManagementUtility(["manage.py", *argv]).execute()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.stdin = old_stdin
    return CliResult(code=code, stdout=out.getvalue(), stderr=err.getvalue())


def database_url_for_subprocess() -> str:
    """A DATABASE_URL for subprocesses that reaches the database this test uses."""
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    auth = quote(s["USER"] or "")
    if s.get("PASSWORD"):
        auth += ":" + quote(s["PASSWORD"])
    host = s.get("HOST") or "127.0.0.1"
    port = s.get("PORT") or "5432"
    return f"postgres://{auth}@{host}:{port}/{s['NAME']}"


def subprocess_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["DATABASE_URL"] = database_url_for_subprocess()
    env["DJANGO_SETTINGS_MODULE"] = "loopx_site.settings"
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def run_manage(*argv: str, timeout: float = 60, **popen) -> subprocess.CompletedProcess:
    """Run ``manage.py`` in a real subprocess against the test database."""
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=subprocess_env(),
        cwd=ROOT,
        check=False,
        **popen,
    )


def cli_document_bytes(*argv: str) -> bytes:
    """The one JSON document ``manage.py <argv>`` printed, as bytes, without the line end
    the shell adds (compare it with an API ``response.content``)."""
    result = run_cli(*argv)
    assert result.code == 0, result.stdout
    assert result.stdout.endswith("\n")
    assert not result.stdout.endswith("\n\n")
    return result.stdout.removesuffix("\n").encode("utf-8")
