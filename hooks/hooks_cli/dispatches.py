"""``hooks dispatches``."""

from hooks import documents, selectors
from hooks.errors import FAILURE_CODES
from hooks.hooks_cli.common import journal, listing_arguments
from hooks.models import HookDispatch
from loopx_site.core.cli import format_table

NAME = "dispatches"
HELP = "The sidecar dispatch journal, newest first."
COLUMNS = [
    "dispatch_id",
    "hook_id",
    "receipt_id",
    "status",
    "failure_code",
    "conflict_code",
    "attempts",
]


def arguments(parser):
    listing_arguments(parser)
    parser.add_argument("--status", choices=HookDispatch.Status.values)
    parser.add_argument("--failure-code", choices=FAILURE_CODES)
    parser.add_argument("--receipt-id")
    parser.add_argument("--hook-id")


def run(command, **options):
    return documents.dispatch_list(journal(selectors.list_dispatches, options))


def render(payload) -> str:
    return format_table(payload["dispatches"], COLUMNS)
