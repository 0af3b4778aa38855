"""``reward_memory mark-experience``."""

from loopx_site.core.cli import add_execute_argument
from reward_memory import contracts
from reward_memory.cli.common import operator_actor, record_operation

NAME = "mark-experience"
HELP = "New source truth marks a procedural_experience stale|quarantined|refuted."


def arguments(parser):
    parser.add_argument("--record-ref", required=True)
    parser.add_argument("--state", required=True, choices=list(contracts.EXPERIENCE_MARKS))
    parser.add_argument("--source-truth-ref", required=True)
    operator_actor(parser)
    add_execute_argument(parser)


def run(command, *, record_ref, state, source_truth_ref, actor, execute=False, **_):
    return record_operation(
        "mark", record_ref=record_ref, actor=actor, execute=execute,
        state=state, source_truth_ref=source_truth_ref,
    )  # fmt: skip
