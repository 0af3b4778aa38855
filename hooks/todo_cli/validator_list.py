"""``todo validator-list``."""

from hooks import documents, services
from hooks.todo_cli.common import VALIDATOR_COLUMNS
from loopx_site.core.cli import format_table

NAME = "validator-list"
HELP = "List the installed completion validators."


def run(command, **_):
    return documents.validator_list(services.list_validators())


def render(payload) -> str:
    return format_table(payload["validators"], VALIDATOR_COLUMNS)
