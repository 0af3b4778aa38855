"""Sandboxed children (``loopx_site.core.sandbox``, docs/security.md "Sandboxed
children"): under a root server an operator-installed extension runs as a separate
unprivileged user and cannot read what only the server may; and a grandchild that
double-forks out of the session is killed and reaped with the run. Real subprocesses."""

import json
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path

import pytest
from django.conf import settings

from loopx_site.core import files, sandbox

CHILDREN = Path(__file__).parent / "sandbox_children"
#: An interpreter any user may execute (the venv's may live under /root).
PYTHON = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
PATIENCE_S = 60

root_only = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="the sandbox user is used only when the server runs as root",
)


@pytest.fixture
def secret_file():
    """A 0600 file of the server's user in a directory every user may traverse."""
    folder = tempfile.mkdtemp(prefix="loopx-sandbox-test-")
    os.chmod(folder, 0o755)
    path = Path(folder) / "secret_key"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, b"not-for-children")
    os.close(fd)
    yield path
    shutil.rmtree(folder, ignore_errors=True)


def _read(path: Path, **kwargs) -> dict:
    result = sandbox.run([PYTHON, str(CHILDREN / "read_secret.py"), str(path)], request=b"",
                         timeout_seconds=PATIENCE_S, **kwargs)  # fmt: skip
    assert result.failure_kind is None, result.failure_kind
    return json.loads(result.stdout)


@root_only
def test_an_extension_child_cannot_read_a_file_only_the_server_may(secret_file, monkeypatch):
    monkeypatch.setenv("LOOPX_SANDBOX_USER", "nobody")
    assert _read(secret_file) == {"denied": True}
    # the same child keeping the server's user (the built-in provider) reads it: the
    # denial above is the sandbox user's, not a missing file
    assert _read(secret_file, as_server=True) == {"read": len(b"not-for-children")}


@root_only
def test_the_servers_secret_key_file_is_closed_to_an_extension_child(monkeypatch):
    key = Path(settings.BASE_DIR) / ".local" / "secret_key"
    if not key.exists():
        pytest.skip("this run's SECRET_KEY comes from the environment, no key file")
    monkeypatch.setenv("LOOPX_SANDBOX_USER", "nobody")
    assert stat.S_IMODE(key.stat().st_mode) & 0o077 == 0
    assert _read(key) == {"denied": True}


def test_the_sqlite_database_file_is_readable_by_the_server_only(db):
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("a PostgreSQL database is no file of the server's")
    connection.ensure_connection()
    name = connection.settings_dict["NAME"]
    if name == ":memory:" or str(name).startswith("file:"):
        pytest.skip("an in-memory test database")
    files.private_database_file(None, connection)
    assert stat.S_IMODE(os.stat(name).st_mode) == 0o600


def test_a_secret_key_file_is_created_readable_by_the_server_only(tmp_path):
    import subprocess

    code = (
        "import os, sys; sys.path.insert(0, sys.argv[1]); "
        "os.environ.pop('SECRET_KEY', None); "
        "import loopx_site.settings as s; "
        "print(oct(os.stat(s.BASE_DIR / '.local' / 'secret_key').st_mode & 0o777))"
    )
    # a copy of the settings' base directory layout: a fresh checkout without .local/
    checkout = tmp_path / "checkout"
    shutil.copytree(Path(settings.BASE_DIR) / "loopx_site", checkout / "loopx_site",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "SECRET_KEY"}
    done = subprocess.run([sys.executable, "-c", code, str(checkout)], env=env, cwd=checkout,
                          capture_output=True, text=True, timeout=PATIENCE_S)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "0o600"


@pytest.mark.parametrize("as_sandbox_user", [False, True])
def test_a_double_forked_grandchild_does_not_outlive_the_run(
    tmp_path, monkeypatch, as_sandbox_user
):
    if as_sandbox_user and os.geteuid() != 0:
        pytest.skip("the sandbox user is used only when the server runs as root")
    monkeypatch.setenv("LOOPX_SANDBOX_USER", "nobody" if as_sandbox_user else "")
    folder = Path(tempfile.mkdtemp(prefix="loopx-sandbox-test-"))
    os.chmod(folder, 0o777)
    pidfile = folder / "grandchild.pid"
    try:
        result = sandbox.run([PYTHON, str(CHILDREN / "double_fork.py"), str(pidfile)],
                             request=b"", timeout_seconds=PATIENCE_S)  # fmt: skip
        assert result.failure_kind is None, result.failure_kind
        grandchild = int(pidfile.read_text())
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    # the run killed and reaped it before returning: no process, not even a zombie
    assert not Path(f"/proc/{grandchild}").exists()
