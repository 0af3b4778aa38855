"""``manage.py goal …`` — one module per subcommand under ``loopx_site/core/goal_cli/``
(``loopx_site.core.cli.add_subcommand_modules``)."""

from loopx_site.core.cli import LoopxCommand


class Command(LoopxCommand):
    help = (
        "Register Goals and their Agents (operator action; preview unless --execute), or list them."
    )
    subcommand_modules = (
        "loopx_site.core.goal_cli.register",
        "loopx_site.core.goal_cli.list_goals",
        "loopx_site.core.goal_cli.erase",
    )
