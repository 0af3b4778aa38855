"""The session privacy scan (``tests/privacy_scan.py``) under pytest-xdist: each worker
scans what its own tests emitted and the controller fails the whole run on a finding,
even when every test passed."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

LEAKY = """
import logging


def test_emits_a_local_path():
    logging.getLogger("loopx.test").warning("wrote /home/alice/.ssh/id_rsa")


def test_emits_nothing():
    assert True
"""


def _run(tmp_path, body: str) -> subprocess.CompletedProcess:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_emitting.py").write_text(body)
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "loopx_site.settings", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-p", "tests.pytest_env", "-p", "no:cacheprovider"),
            *("-n", "2", "--rootdir", str(tmp_path), str(tmp_path / "test_emitting.py")),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,  # bounds a hung run only
        check=False,
    )


@pytest.mark.slow
def test_a_finding_in_one_worker_fails_the_parallel_run(tmp_path):
    run = _run(tmp_path, LEAKY)
    assert "2 passed" in run.stdout, run.stdout[-3000:]
    assert run.returncode == 1, run.stdout[-3000:]
    assert "privacy scan" in run.stdout
    assert "test_emits_a_local_path [log:loopx.test] local_path" in run.stdout


@pytest.mark.slow
def test_a_clean_parallel_run_reports_what_its_workers_scanned(tmp_path):
    run = _run(tmp_path, LEAKY.replace("/home/alice/.ssh/id_rsa", "a receipt"))
    assert run.returncode == 0, run.stdout[-3000:]
    assert "privacy scan: 1 emitted documents/log lines clean" in run.stdout
