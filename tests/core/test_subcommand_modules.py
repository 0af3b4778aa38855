"""Subcommands declared one module each (``loopx_site.core.cli.add_subcommand_modules``):
every module a command lists is complete, and every module in its package is listed."""

import importlib
from pathlib import Path

import pytest

from loopx_site.core.cli import LoopxCommand

COMMANDS = [
    "reward_memory.management.commands.reward_memory",
    "loopx_site.core.management.commands.goal",
    "loopx_site.core.management.commands.token",
    "hooks.management.commands.hooks",
    "hooks.management.commands.todo",
    "loopx_site.core.management.commands.memory",
]
SHARED = {"__init__", "common"}


@pytest.mark.parametrize("path", COMMANDS)
def test_every_subcommand_module_is_listed_once_and_declares_name_help_and_run(path):
    command = importlib.import_module(path).Command
    assert issubclass(command, LoopxCommand)
    listed = list(command.subcommand_modules)
    assert len(listed) == len(set(listed))
    names = []
    for dotted in listed:
        module = importlib.import_module(dotted)
        assert isinstance(module.NAME, str)
        assert isinstance(module.HELP, str)
        assert module.HELP
        assert callable(module.run)
        names.append(module.NAME)
    assert len(names) == len(set(names))
    package = importlib.import_module(listed[0].rsplit(".", 1)[0])
    on_disk = {p.stem for p in Path(package.__file__).parent.glob("*.py")} - SHARED
    assert {dotted.rsplit(".", 1)[1] for dotted in listed} == on_disk


def test_a_subcommand_module_runs_renders_and_sets_the_exit_status(db, tmp_path):
    from tests.helpers import run_cli

    out = run_cli("reward_memory", "architecture")
    assert out.code == 0
    assert out.json["schema_version"]
    text = run_cli("reward_memory", "route-check", "--case", sorted(_route_cases())[0],
                   "--format", "text")  # fmt: skip
    assert text.code == 0
    assert text.stdout.strip()


def _route_cases():
    from reward_memory import routing

    return routing.CASES
