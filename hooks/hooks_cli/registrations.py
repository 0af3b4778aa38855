"""``hooks registrations``."""

from hooks import documents, selectors
from loopx_site.core.cli import format_table

NAME = "registrations"
HELP = "Installed hook registrations and their validation status."


def run(command, **_):
    return documents.registration_list(selectors.registrations(operator=True))


def render(payload) -> str:
    return format_table(
        payload["registrations"],
        ["hook_id", "capability_id", "status", "admitted_by_profile", "reason"],
    )
