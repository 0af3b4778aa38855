"""``manage.py token …`` — one module per subcommand under ``loopx_site/core/token_cli/``
(``loopx_site.core.cli.add_subcommand_modules``)."""

from loopx_site.core.cli import LoopxCommand


class Command(LoopxCommand):
    help = "Issue a host API token scoped to one Goal (optionally one Agent)."
    subcommand_modules = ("loopx_site.core.token_cli.create",)
