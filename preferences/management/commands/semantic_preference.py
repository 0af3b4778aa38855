"""``manage.py semantic_preference …`` — one module per subcommand under
``preferences/cli/``, the ``agent`` and ``extension`` groups one package each
(``loopx_site.core.cli.add_subcommand_modules``)."""

from loopx_site.core.cli import LoopxCommand


class Command(LoopxCommand):
    help = (
        "Explicit Agent preferences (agent read|observe|remember|retire|history|migrate-scope) and "
        "the optional semantic preference recall hook."
    )
    error_area = "semantic_preference"
    subcommand_modules = (
        "preferences.cli.agent",
        "preferences.cli.recall",
        "preferences.cli.doctor",
        "preferences.cli.receipt",
        "preferences.cli.maintenance_receipt",
        "preferences.cli.extension",
    )
