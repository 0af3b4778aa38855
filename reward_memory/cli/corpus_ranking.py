"""``reward_memory corpus-ranking``."""

from typing import Any

from loopx_site.core.cli import add_execute_argument
from reward_memory import principals
from reward_memory.documents import relevance as documents
from reward_memory.models import RANKINGS
from reward_memory.services import ranking as service

HELP = "Set a corpus's ranking: lexical (exact BM25) or hybrid (BM25 + embeddings + floor)."

NAME = "corpus-ranking"


def arguments(parser) -> None:
    parser.add_argument("--corpus-id", required=True)
    parser.add_argument("--ranking", required=True, choices=RANKINGS)
    parser.add_argument("--actor", required=True, help="The corpus owner's account (user:<name>).")
    add_execute_argument(parser, "Store the setting.")


def run(command, *, corpus_id, ranking, actor, execute=False, **_) -> dict[str, Any]:
    principal = principals.operator_account(actor, field="actor", code="owner_not_authorized")
    change = service.set_corpus_ranking(
        corpus_id=corpus_id, ranking=ranking, principal=principal, execute=execute
    )
    return documents.corpus_ranking(change)
