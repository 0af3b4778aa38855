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
