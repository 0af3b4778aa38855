"""Every LoopX management command honours the CLI contract: malformed input is one
structured error on stdout with exit status 2, never a traceback or a usage dump."""

import json

import pytest
from django.core.management import get_commands, load_command_class

from loopx_site.core.cli import LoopxCommand
from tests.helpers import run_cli


def loopx_commands() -> list[str]:
    names = []
    for name, app in sorted(get_commands().items()):
        if app.startswith("django") or app in ("rest_framework", "drf_spectacular"):
            continue
        if isinstance(load_command_class(app, name), LoopxCommand):
            names.append(name)
    return names


COMMANDS = loopx_commands()


def test_the_project_commands_are_all_loopx_commands():
    assert {"goal", "token", "semantic_preference", "remember"} <= set(COMMANDS)


@pytest.mark.parametrize("name", COMMANDS)
@pytest.mark.parametrize("junk", [["--no-such-flag"], ["--format", "yaml"], ["\x00"]])
def test_malformed_input_is_one_envelope_with_exit_2(db, name, junk):
    result = run_cli(name, *junk)
    assert result.code == 2, (name, result.stdout, result.stderr)
    payload = json.loads(result.stdout)  # exactly one JSON document
    assert payload["ok"] is False
    assert payload["schema_version"].endswith("_error_v0")
    assert payload["code"]
    assert "Traceback" not in result.stdout + result.stderr
    assert "usage:" not in result.stdout


@pytest.mark.parametrize("name", COMMANDS)
def test_help_is_available(name):
    result = run_cli(name, "--help")
    assert result.code == 0
    assert "usage:" in result.stdout
