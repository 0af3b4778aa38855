"""``semantic_preference agent history``."""

import argparse

from preferences import selectors
from preferences.cli.agent.common import accept_loopx_flags, add_identity

NAME = "history"
HELP = "Page through the journal, oldest first."


def arguments(parser):
    add_identity(parser)
    parser.add_argument("--after-cursor", help="next_cursor of the previous page.")
    parser.add_argument(
        "--limit",
        type=_limit,
        default=selectors.HISTORY_PAGE,
        help=f"1-{selectors.HISTORY_MAX_LIMIT} (default {selectors.HISTORY_PAGE}).",
    )
    accept_loopx_flags(parser)


def run(command, *, goal_id, agent_id, after_cursor, limit, **_):
    from preferences import documents, services

    return documents.respond(
        documents.history,
        services.history,
        goal_id=goal_id,
        agent_id=agent_id,
        after_cursor=after_cursor,
        limit=limit,
    )


def render(doc) -> str:
    lines = []
    for e in doc["events"]:
        lines.append(
            f"#{e['sequence']} {e['recorded_at']} {e['kind']} {e['key']} "
            f"rev={e['revision']} op={e['operation_id']} "
            f"supersedes={e['supersedes_operation_id'] or '-'}"
        )
        if e["statement"] is not None:
            lines.append(f"    {e['statement']}")
    if not doc["events"]:
        lines.append("(no events)")
    lines.append(f"has_more: {str(doc['has_more']).lower()}")
    lines.append(f"next_cursor: {doc['next_cursor'] or '-'}")
    return "\n".join(lines)


def _limit(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("--limit must be a whole number") from None
