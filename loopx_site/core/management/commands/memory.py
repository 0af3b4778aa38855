"""``manage.py memory …`` — a Goal's memory out of and into an instance (operator
action; docs/export.md). One module per subcommand under ``loopx_site/core/memory_cli/``."""

from loopx_site.core.cli import LoopxCommand


class Command(LoopxCommand):
    help = "Export a Goal's memory as a JSONL stream, or import one (operator action)."
    subcommand_modules = (
        "loopx_site.core.memory_cli.export",
        "loopx_site.core.memory_cli.import_",
    )
