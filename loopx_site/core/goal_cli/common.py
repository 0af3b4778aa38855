"""What the ``goal`` subcommands share: the Goal table of their text form."""

from loopx_site.core.cli import format_table

COLUMNS = ["goal_id", "agents", "state_ref", "instance_id", "updated_at"]


def goals_table(goals) -> str:
    rows = [{**g, "agents": ",".join(g["agents"])} for g in goals]
    return format_table(rows, COLUMNS)
