"""``reward_memory expire-records``."""

from loopx_site.core.cli import add_execute_argument
from reward_memory import services

NAME = "expire-records"
HELP = "Close active records whose expiry has passed."


def arguments(parser):
    parser.add_argument("--corpus-id")
    add_execute_argument(parser)


def run(command, *, corpus_id=None, execute=False, **_):
    return services.expire_due_records(corpus_id=corpus_id, execute=execute)
