"""CLI of the semantic preference recall hook: recall, doctor, receipt, maintenance-receipt,
extension install|activate|deactivate|list."""

from loopx_site.core.cli import Subcommands


def register(sub: Subcommands) -> None:
    """Add the recall hook's subcommands to ``manage.py semantic_preference``."""
