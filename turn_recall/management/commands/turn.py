"""``manage.py turn …`` — one module per subcommand under ``turn_recall/turn_cli/``
(``loopx_site.core.cli.add_subcommand_modules``)."""

from hooks.errors import AREA
from loopx_site.core.cli import LoopxCommand


class Command(LoopxCommand):
    help = "Settle a Turn: primary durable writeback, then the post-writeback hook phase."
    error_area = AREA
    subcommand_modules = (
        "turn_recall.turn_cli.settle",
        "turn_recall.turn_cli.run_once",
        "turn_recall.turn_cli.verify_capsule",
    )
