"""The shortcut commands (``manage.py recall``, ``manage.py remember``): one subcommand of
``semantic_preference`` under its own name, with the same arguments, handler and text."""

from collections.abc import Callable
from typing import Any

from loopx_site.core.cli import LoopxCommand


def shortcut(
    help_text: str,
    add_arguments: Callable[[Any], None],
    run: Callable[..., dict[str, Any]],
    render: Callable[[dict[str, Any]], str],
) -> type[LoopxCommand]:
    """A management ``Command`` that declares ``add_arguments``, runs ``run`` and renders
    its text with ``render``."""

    class Command(LoopxCommand):
        help = help_text
        error_area = "semantic_preference"

        def add_command_arguments(self, parser):
            add_arguments(parser)

        def run(self, **options):
            return run(**options)

        def render_text(self, payload, *, subcommand=None):
            return render(payload)

    return Command
