"""Subcommands declared one module each (``loopx_site.core.cli.add_subcommand_modules``):
every command of ours that has subcommands lists their modules — none declares one
inline —, every module a command (or a group) lists is complete, and every module in its
package is listed."""

import argparse
import importlib
from pathlib import Path

import pytest
from django.core.management import BaseCommand, get_commands, load_command_class

from loopx_site.core.cli import LoopxCommand

SHARED = {"__init__", "common"}


def _our_commands() -> dict[str, str]:
    """Every management command of this project's apps: name → app."""
    return {
        name: app
        for name, app in get_commands().items()
        if not app.startswith(("django.", "rest_framework", "drf_spectacular"))
    }


OURS = _our_commands()


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(path, parser) of every subcommand that runs (not a group)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _leaves(sub, (*path, name))
            return
    if path:
        yield path, parser


def inline_subcommands(command: BaseCommand, name: str) -> list[str]:
    """The subcommands of ``command`` that no listed module declares."""
    parser = command.create_parser("manage.py", name)
    return [
        " ".join(path)
        for path, leaf in _leaves(parser)
        if leaf.get_default("_loopx_module") is None
    ]


@pytest.mark.parametrize("name", sorted(OURS))
def test_no_command_declares_a_subcommand_inline(name):
    assert inline_subcommands(load_command_class(OURS[name], name), name) == []


def test_the_check_finds_a_subcommand_declared_inline():
    class Inline(LoopxCommand):
        def add_command_arguments(self, parser):
            action = parser.add_subparsers(dest="subcommand")
            action.add_parser("inline")

    assert inline_subcommands(Inline(), "inline_command") == ["inline"]
    assert inline_subcommands(load_command_class("turn_recall", "turn"), "turn") == []


def _with_modules() -> list[str]:
    return sorted(
        name
        for name, app in OURS.items()
        if getattr(load_command_class(app, name), "subcommand_modules", ())
    )


def _check_listing(listed: tuple[str, ...]) -> None:
    assert len(listed) == len(set(listed))
    names = []
    for dotted in listed:
        module = importlib.import_module(dotted)
        assert isinstance(module.NAME, str)
        assert isinstance(module.HELP, str)
        assert module.HELP
        names.append(module.NAME)
        nested = getattr(module, "subcommand_modules", None)
        if nested is not None:  # a group: a package listing its own modules
            assert all(path.startswith(dotted + ".") for path in nested)
            _check_listing(nested)
        else:
            assert callable(module.run)
    assert len(names) == len(set(names))
    package = Path(importlib.import_module(listed[0].rsplit(".", 1)[0]).__file__).parent
    on_disk = {p.stem for p in package.glob("*.py")} - SHARED
    on_disk |= {p.parent.name for p in package.glob("*/__init__.py")}
    assert {dotted.rsplit(".", 1)[1] for dotted in listed} == on_disk


@pytest.mark.parametrize("name", _with_modules())
def test_every_subcommand_module_is_listed_once_and_declares_name_help_and_run(name):
    command = load_command_class(OURS[name], name)
    _check_listing(command.subcommand_modules)


def test_the_commands_with_subcommands_are_found():
    assert {"reward_memory", "semantic_preference", "turn", "quota", "hooks"} <= set(
        _with_modules()
    )


def test_a_subcommand_module_runs_renders_and_sets_the_exit_status(db, tmp_path):
    from tests.helpers import run_cli

    out = run_cli("reward_memory", "architecture")
    assert out.code == 0
    assert out.json["schema_version"]
    text = run_cli("reward_memory", "route-check", "--case", sorted(_route_cases())[0],
                   "--format", "text")  # fmt: skip
    assert text.code == 0
    assert text.stdout.strip()


def test_a_group_runs_its_own_modules(db):
    from tests.helpers import run_cli

    out = run_cli("semantic_preference", "agent", "read", "--goal-id", "nope", "--agent-id", "a")
    assert out.code == 2
    assert out.json["code"]
    text = run_cli("semantic_preference", "extension", "list", "--format", "text")
    assert text.code == 0
    assert text.stdout.startswith("EXTENSION_ID")


def _route_cases():
    from reward_memory import routing

    return routing.CASES
