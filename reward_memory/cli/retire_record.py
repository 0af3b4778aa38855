"""``reward_memory retire-record``."""

from loopx_site.core.cli import add_execute_argument
from reward_memory.cli.common import operator_actor, record_operation

NAME = "retire-record"
HELP = "Retire an active record (retirement authority or owner)."


def arguments(parser):
    parser.add_argument("--record-ref", required=True)
    operator_actor(parser)
    parser.add_argument("--reason-summary")
    add_execute_argument(parser)


def run(command, *, record_ref, actor, reason_summary=None, execute=False, **_):
    return record_operation(
        "retire", record_ref=record_ref, actor=actor, execute=execute,
        reason_summary=reason_summary,
    )  # fmt: skip
