"""Progress on stderr for long work: counts and rate, silent for piped JSON."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from loopx_site.core import progress
from tests.helpers import run_cli

ROOT = Path(__file__).resolve().parents[2]


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_enabled_only_for_text_or_a_terminal():
    assert progress.enabled("text", io.StringIO())
    assert not progress.enabled("json", io.StringIO())
    assert progress.enabled("json", _Tty())


def test_track_is_a_no_op_outside_a_reporting_command():
    items = [1, 2, 3]
    assert progress.track(items, desc="x") is items


def test_track_draws_counts_and_rate_while_a_command_reports():
    stream = io.StringIO()
    with progress.reporting("text", stream):
        assert list(progress.track([1, 2, 3], desc="replay", unit="receipt")) == [1, 2, 3]
    out = stream.getvalue()
    assert "replay" in out
    assert "3/3" in out
    assert "receipt/s" in out


@pytest.fixture
def demo(db):
    from django.core.management import call_command

    call_command("loopx_demo", stdout=io.StringIO())


def test_long_commands_show_progress_in_text_and_stay_silent_in_json(demo):
    text = run_cli("loopx_demo", "--format", "text")
    assert "demo" in text.stderr
    assert "6/6" in text.stderr
    quiet = run_cli("loopx_demo")
    assert quiet.stderr == ""
    json.loads(quiet.stdout)
    replay = run_cli("hooks", "replay", "--receipt-id", _a_receipt(), "--format", "text")
    assert replay.code == 0, replay.stdout
    assert "hook replay" in replay.stderr


def _a_receipt() -> str:
    from hooks.models import DurableWritebackReceipt

    return DurableWritebackReceipt.objects.values_list("receipt_id", flat=True).first()


@pytest.mark.slow
def test_soak_script_cleans_up_its_temp_database(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["TMPDIR"] = str(tmp_path)
    proc = subprocess.run(
        [sys.executable, "bench/preferences_soak.py", "--operations", "40", "--threads", "2"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["operations"] == 40
    assert list(tmp_path.iterdir()) == []
