"""``reward_memory revoke-record``."""

from loopx_site.core.cli import add_execute_argument
from reward_memory.cli.common import operator_actor, record_operation

NAME = "revoke-record"
HELP = "Revoke an active record (authority source or owner)."


def arguments(parser):
    parser.add_argument("--record-ref", required=True)
    operator_actor(parser)
    parser.add_argument("--revocation-ref", required=True)
    add_execute_argument(parser)


def run(command, *, record_ref, actor, revocation_ref, execute=False, **_):
    return record_operation(
        "revoke", record_ref=record_ref, actor=actor, execute=execute,
        revocation_ref=revocation_ref,
    )  # fmt: skip
