"""``reward_memory embed-backfill``."""

from typing import Any

from loopx_site.core import progress
from loopx_site.core.cli import add_execute_argument
from reward_memory.documents import records as documents
from reward_memory.services import ranking

NAME = "embed-backfill"
HELP = "Compute the embeddings of local provider documents that have none (preview by default)."


def arguments(parser) -> None:
    add_execute_argument(parser, "Compute and store the vectors.")


def run(command, *, execute=False, **_) -> dict[str, Any]:
    result = ranking.backfill_embeddings(execute=execute, track=progress.track)
    return documents.embed_backfill(result)
