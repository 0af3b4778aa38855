"""``manage.py quota …`` — one module per subcommand under ``turn_recall/quota_cli/``
(``loopx_site.core.cli.add_subcommand_modules``)."""

from loopx_site.core.cli import LoopxCommand
from turn_recall import contracts as c


class Command(LoopxCommand):
    help = "The quota decision packet a host routes an autonomous turn with (read-only)."
    error_area = c.AREA
    subcommand_modules = ("turn_recall.quota_cli.should_run",)
