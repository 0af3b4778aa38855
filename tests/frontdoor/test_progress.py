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


def test_track_draws_counts_and_rate_while_a_command_reports_to_a_terminal():
    stream = _Tty()
    with progress.reporting("text", stream):
        assert list(progress.track([1, 2, 3], desc="replay", unit="receipt")) == [1, 2, 3]
    out = stream.getvalue()
    assert "replay" in out
    assert "3/3" in out
    assert "receipt/s" in out


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


def test_off_a_terminal_text_gets_one_summary_line_and_no_bar():
    stream = io.StringIO()
    with progress.reporting("text", stream):
        assert list(progress.track(iter([1, 2, 3]), desc="reconcile ingests", unit="event")) == [
            1,
            2,
            3,
        ]
    out = stream.getvalue()
    assert "\r" not in out  # nothing redrawn in place
    assert out.count("\n") == 1
    assert out.startswith("reconcile ingests: 3 events in ")
    assert out.endswith(" s\n")


def test_on_a_terminal_the_bar_is_drawn():
    stream = _Tty()
    with progress.bar(total=2, desc="demo", unit="loader", fmt="text", file=stream) as b:
        b.update(2)
    assert "2/2" in stream.getvalue()
    assert "loader/s" in stream.getvalue()


def test_make_run_log_has_no_bar_mixed_into_the_text_output(demo):
    text = run_cli("loopx_demo", "--format", "text")
    assert "\r" not in text.stderr
    assert "%|" not in text.stderr + text.stdout
    assert "demo: 6/6 loaders in " in text.stderr
