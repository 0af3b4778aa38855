"""``goal list``."""

from loopx_site.core import documents, selectors
from loopx_site.core.goal_cli.common import goals_table

NAME = "list"
HELP = "List registered Goals with their Agents."


def run(command, **_):
    return documents.goal_list(selectors.list_goals())


def render(payload) -> str:
    return goals_table(payload["goals"])
