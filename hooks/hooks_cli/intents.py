"""``hooks intents``."""

from hooks import documents, selectors
from hooks.hooks_cli.common import journal, listing_arguments
from hooks.models import HookIntent
from loopx_site.core.cli import format_table

NAME = "intents"
HELP = "The intent outbox, newest first."


def arguments(parser):
    listing_arguments(parser)
    parser.add_argument("--status", choices=HookIntent.Status.values)
    parser.add_argument("--intent-kind")


def run(command, **options):
    return documents.intent_list(journal(selectors.list_intents, options))


def render(payload) -> str:
    rows = [{**i, "status": i["outbox"]["status"]} for i in payload["intents"]]
    return format_table(rows, ["intent_id", "intent_kind", "operation", "status"])
