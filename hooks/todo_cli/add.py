"""``todo add``."""

from hooks import documents, services
from hooks.todo_cli.common import TODO_COLUMNS, preview_hint
from loopx_site.core.cli import call_with_options, format_table

NAME = "add"
HELP = "Add a Todo to a Goal; adding the same Todo again is a no-op."


def arguments(parser):
    parser.add_argument("--goal-id", required=True)
    parser.add_argument("--todo-id", required=True)
    parser.add_argument("--title", required=True, help="Owner prose; never sent to hooks.")
    parser.add_argument("--segment-ref", help="Opaque reference of the segment it belongs to.")
    parser.add_argument(
        "--validator",
        help="validator_id of an installed completion validator the server runs at "
        "settlement (see `todo validator-install`).",
    )
    parser.add_argument("--execute", action="store_true", help="Add it (default: preview).")


def run(command, **options):
    result = call_with_options(services.add_todo, options)
    return documents.todo_add(result, execute=options["execute"])


def render(payload) -> str:
    table = format_table([payload["todo"]], TODO_COLUMNS)
    return f"status: {payload['status']}{preview_hint(payload)}\n\n{table}"
