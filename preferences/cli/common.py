"""What the ``semantic_preference`` subcommands share: the recall hook's config and scope,
its repeatable references, and the shortcut commands (``manage.py recall``, ``manage.py
remember``) that run one subcommand module under their own name.

``preferences.services`` and ``preferences.documents.recall`` are imported when a
subcommand runs: building the parser (every ``semantic_preference`` call) needs neither.
"""

import argparse
from collections.abc import Callable
from types import ModuleType
from typing import Any

from loopx_site.core.cli import LoopxCommand


def add_config(parser: argparse.ArgumentParser) -> None:
    """``--project`` and ``--config``: where the recall hook's provider comes from."""
    parser.add_argument(
        "--project", default=".", help="Project reference for the provider (default: .)."
    )
    parser.add_argument(
        "--config", required=True, help="Ignored config file, or a registered config name."
    )


def config_and_scope(config: str):
    """The config ``--config`` names, and the Goal scope a registered one runs with."""
    from preferences import services

    source = services.config_for_cli(config)
    scope = services.scope_of(source) if not isinstance(source, str) else None
    return source, scope


def add_refs(parser: argparse.ArgumentParser, flag: str, help_text: str) -> None:
    """A repeatable optional ``--<name>-ref`` gathered into ``<name>_refs`` (empty when
    not given): provider-owned references a receipt hashes."""
    dest = flag.removeprefix("--").replace("-", "_") + "s"
    parser.add_argument(flag, action="append", default=[], dest=dest, help=help_text)


def shortcut(
    help_text: str, module: ModuleType, arguments: Callable[[Any], None]
) -> type[LoopxCommand]:
    """A management ``Command`` with ``arguments``, running the subcommand ``module``
    (its ``run`` and, for ``--format text``, its ``render``)."""

    class Command(LoopxCommand):
        help = help_text
        error_area = "semantic_preference"

        def add_command_arguments(self, parser):
            arguments(parser)

        def run(self, **options):
            return module.run(self, **options)

        def render_text(self, payload, *, subcommand=None):
            return module.render(payload)

    return Command
