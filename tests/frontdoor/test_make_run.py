"""`make run` is stable: port checked first, operator created once, demo idempotent and
truthful about what a rerun did."""

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from reward_memory.domain.inputs import FIXTURES
from tests.reward_memory import factories as rm_f

pytestmark = pytest.mark.slow  # runs make and manage.py in subprocesses

ROOT = Path(__file__).resolve().parents[2]


def _demo(capsys, *args):
    call_command("loopx_demo", *args)
    return json.loads(capsys.readouterr().out)


@pytest.mark.django_db(transaction=True)
def test_second_demo_run_reports_kept_and_keeps_the_operator_password(capsys):
    first = _demo(capsys, "--operator", "op1")
    assert first["operator"]["status"] == "created"
    password = first["operator"]["password"]
    assert first["loaded"]["loopx_site.core"]["status"] == "created"
    assert first["loaded"]["reward_memory"]["ingest_statuses"] == ["activated"] * 3
    assert "preferences.demo_recall" in first["loaded"]  # one key per loader module

    second = _demo(capsys, "--operator", "op1")
    assert second["operator"] == {
        "username": "op1",
        "status": "kept",
        "password": None,
        "hint": "password unchanged; `make reset-operator-password` sets a new one",
    }
    assert get_user_model().objects.get(username="op1").check_password(password)
    assert second["loaded"]["loopx_site.core"]["status"] == "kept"
    assert second["loaded"]["reward_memory"]["ingest_statuses"] == ["kept"] * 3
    assert second["loaded"]["reward_memory"]["review_applied"] == "kept"
    for label, loaded in second["loaded"].items():  # every loader, every object: kept
        assert loaded["status"] == "kept", label
        assert set(loaded["objects"].values()) == {"kept"}, label
        assert set(first["loaded"][label]["objects"].values()) == {"created"}, label
    hooks = {**first["loaded"]["hooks"], "status": "kept"}
    assert {**hooks, "objects": second["loaded"]["hooks"]["objects"]} == second["loaded"]["hooks"]


@pytest.mark.django_db(transaction=True)
def test_reset_password_sets_a_new_one_without_loading_the_demo(capsys):
    created = _demo(capsys, "--operator", "op2")
    reset = _demo(capsys, "--operator", "op2", "--reset-password")
    assert "loaded" not in reset
    assert reset["operator"]["status"] == "password_reset"
    assert reset["operator"]["password"] != created["operator"]["password"]
    user = get_user_model().objects.get(username="op2")
    assert user.check_password(reset["operator"]["password"])
    assert user.is_staff
    assert user.is_superuser


@pytest.mark.django_db(transaction=True)
def test_repeated_ingest_returns_the_same_receipt_flagged_deduplicated(capsys):
    call_command("loopx_demo")
    capsys.readouterr()
    event = json.loads((FIXTURES / "scoped_feedback_event.json").read_text())
    again = rm_f.ingested(event=event, goal_id="demo", agent_id="author", execute=True)
    twice = rm_f.ingested(event=event, goal_id="demo", agent_id="author", execute=True)
    assert again["deduplicated"] is True
    assert again == twice
    assert again["status"] == "activated"


def test_busy_port_fails_fast_with_a_clear_message_and_no_setup():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        started = time.monotonic()
        proc = subprocess.run(
            ["make", "-s", "run", f"PORT={port}", f"PYTHON={sys.executable}", "BIN=/nonexistent"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=30,
        )
        elapsed = time.monotonic() - started
    assert proc.returncode != 0
    assert f"127.0.0.1:{port} is already in use" in proc.stderr
    assert "make run PORT=" in proc.stderr
    assert "migrate" not in proc.stdout + proc.stderr  # nothing ran after the check
    assert elapsed < 2.0


def test_free_port_passes_the_check():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.run(
        [sys.executable, "scripts/check-port.py", "127.0.0.1", str(port)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
