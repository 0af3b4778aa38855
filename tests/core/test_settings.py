import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.slow  # starts a Python interpreter with production settings


def test_production_settings_pass_check_deploy(tmp_path):
    env = {
        "PATH": os.environ["PATH"],
        "DEBUG": "false",
        "SECRET_KEY": "x" * 64 + "-production-like-secret-value",
        "ALLOWED_HOSTS": "loopx.example.org",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'prod.sqlite3'}",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def _check_deploy(tmp_path, **extra) -> subprocess.CompletedProcess:
    env = {
        "PATH": os.environ["PATH"],
        "DEBUG": "false",
        "SECRET_KEY": "x" * 64 + "-production-like-secret-value",
        "ALLOWED_HOSTS": "loopx.example.org",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'prod.sqlite3'}",
        **extra,
    }
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_check_deploy_refuses_cache_throttles_on_a_per_process_cache(tmp_path):
    result = _check_deploy(tmp_path, LOOPX_THROTTLE_STORE="cache")  # CACHE_URL unset: locmem
    assert result.returncode == 1, result.stdout + result.stderr
    assert "loopx.E001" in result.stderr
    assert "CACHE_URL" in result.stderr


def test_check_deploy_accepts_cache_throttles_on_a_shared_cache(tmp_path):
    result = _check_deploy(
        tmp_path, LOOPX_THROTTLE_STORE="cache", CACHE_URL="redis://127.0.0.1:6390/0"
    )
    assert "loopx.E001" not in result.stdout + result.stderr
    assert result.returncode == 0, result.stdout + result.stderr
