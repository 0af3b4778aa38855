"""File options read through ``loopx_site.core.files``: a FIFO never blocks, deep
nesting is a coded error — real subprocesses, exit 2 and one envelope, no traceback."""

import json
import os

import pytest

from tests.helpers import run_manage

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "input.fifo"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    "argv",
    [
        ["reward_memory", "ingest-event", "--goal-id", "demo", "--agent-id", "author"],
        ["reward_memory", "recall"],
        ["reward_memory", "register-corpus"],
    ],
)
def test_fifo_input_exits_2_without_blocking(fifo, argv):
    result = run_manage(*argv, "--input", str(fifo), timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    payload = json.loads(result.stdout)
    assert payload["code"] == "invalid_input_file"
    assert payload["field"] == "input"
    assert str(fifo) not in result.stdout  # the path is never echoed
    assert "Traceback" not in result.stdout + result.stderr


def test_deeply_nested_input_exits_2_without_traceback(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text('{"a":' * 5000 + "1" + "}" * 5000)
    result = run_manage("reward_memory", "recall", "--input", str(deep), timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    payload = json.loads(result.stdout)
    assert payload["code"] == "invalid_input_file"
    assert "nests deeper" in payload["error"]
    assert "Traceback" not in result.stdout + result.stderr
