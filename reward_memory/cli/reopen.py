"""``reward_memory reopen``."""

from loopx_site.core.cli import add_execute_argument
from reward_memory import principals, services
from reward_memory.cli.common import operator_actor
from reward_memory.documents import authority as authority_documents

NAME = "reopen"
HELP = "Reopen a rejected/retired/revoked candidate lineage (operator only)."


def arguments(parser):
    parser.add_argument("--corpus-id", required=True)
    parser.add_argument("--candidate-ref", required=True)
    operator_actor(parser)
    add_execute_argument(parser)


def run(command, *, corpus_id, candidate_ref, actor, execute=False, **_):
    operator = principals.operator_account(actor, field="actor", code="operator_required")
    reopening = services.reopen_lineage(
        corpus_id=corpus_id, candidate_ref=candidate_ref, operator=operator, execute=execute
    )
    return authority_documents.lineage_reopen(reopening)
