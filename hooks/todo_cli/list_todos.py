"""``todo list``."""

from hooks import documents, selectors
from hooks.todo_cli.common import TODO_COLUMNS
from loopx_site.core.cli import format_table

NAME = "list"
HELP = "List a Goal's Todos."


def arguments(parser):
    parser.add_argument("--goal-id", required=True)
    parser.add_argument("--state", choices=["open", "completed"])


def run(command, *, goal_id, state, **_):
    return documents.todo_list(goal_id, selectors.list_todos(goal_id, state=state))


def render(payload) -> str:
    return format_table(payload["todos"], TODO_COLUMNS)
