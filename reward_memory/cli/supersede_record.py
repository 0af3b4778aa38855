"""``reward_memory supersede-record``."""

from loopx_site.core.cli import add_execute_argument
from reward_memory.cli.common import operator_actor, record_operation

NAME = "supersede-record"
HELP = "Supersede an active record by another (owner)."


def arguments(parser):
    parser.add_argument("--record-ref", required=True)
    operator_actor(parser)
    parser.add_argument("--by-record-ref", required=True)
    add_execute_argument(parser)


def run(command, *, record_ref, actor, by_record_ref, execute=False, **_):
    return record_operation(
        "supersede", record_ref=record_ref, actor=actor, execute=execute,
        by_record_ref=by_record_ref,
    )  # fmt: skip
