"""``reward_memory expire-records``."""

from loopx_site.core.cli import add_execute_argument
from reward_memory import services
from reward_memory.documents import records as documents

NAME = "expire-records"
HELP = "Close active records whose expiry has passed."


def arguments(parser):
    parser.add_argument("--corpus-id")
    add_execute_argument(parser)


def run(command, *, corpus_id=None, execute=False, **_):
    return documents.expiry_sweep(services.expire_due_records(corpus_id=corpus_id, execute=execute))
