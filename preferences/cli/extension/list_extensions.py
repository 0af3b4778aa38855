"""``semantic_preference extension list``."""

from loopx_site.core.cli import format_table
from preferences.cli.extension.common import EXTENSION_COLUMNS

NAME = "list"
HELP = "List installed extensions."


def run(command, **_):
    from preferences import services
    from preferences.documents import extensions as documents

    return documents.listing(services.list_extensions())


def render(payload) -> str:
    return format_table(payload["extensions"], EXTENSION_COLUMNS)
