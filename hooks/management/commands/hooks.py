"""``manage.py hooks …`` — one module per subcommand under ``hooks/hooks_cli/``
(``loopx_site.core.cli.add_subcommand_modules``)."""

from hooks.errors import AREA
from loopx_site.core.cli import LoopxCommand


class Command(LoopxCommand):
    help = (
        "Post-writeback capability hooks: installed registrations, the dispatch journal, "
        "the intent outbox, crash-recovery replay and the governed executor."
    )
    error_area = AREA
    subcommand_modules = (
        "hooks.hooks_cli.registrations",
        "hooks.hooks_cli.dispatches",
        "hooks.hooks_cli.intents",
        "hooks.hooks_cli.replay",
        "hooks.hooks_cli.execute_intents",
    )
