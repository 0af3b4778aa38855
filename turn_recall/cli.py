"""What the turn_recall commands share (``agent_turn_recall``, ``quota``, ``turn``): the
scope arguments, declared once, and the shell's caller (the one resolver's operator)."""

from loopx_site.core import access
from turn_recall import contracts as c


def add_scope(parser, *, turn: bool | None = True, execute: str | None = None) -> None:
    """``--goal-id`` and ``--agent-id``; ``--turn-instance-id`` (required when ``turn``,
    optional when ``None``, absent when ``False``); ``--execute`` with its help."""
    parser.add_argument("--goal-id", required=True)
    parser.add_argument("--agent-id", required=True)
    if turn is not False:
        parser.add_argument(
            "--turn-instance-id", required=bool(turn), help="The host's opaque turn id."
        )
    if execute:
        parser.add_argument("--execute", action="store_true", help=execute)


def acting(goal_id: str, agent_id: str) -> access.Caller:
    """The operator's shell acting for (Goal, Agent), through the same resolver as the API."""
    return access.SHELL.acting_for(goal_id, agent_id, area=c.AREA)
