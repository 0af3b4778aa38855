"""``semantic_preference agent observe``."""

from preferences.cli.agent.common import accept_loopx_flags, add_identity

NAME = "observe"
HELP = "Content-free: does this scope hold preferences, and how many (no statements)."


def arguments(parser):
    add_identity(parser)
    accept_loopx_flags(parser)


def run(command, *, goal_id, agent_id, **_):
    from preferences import documents, selectors

    return documents.respond(
        documents.observe, selectors.observe, goal_id=goal_id, agent_id=agent_id
    )


def render(doc) -> str:
    return f"{doc['status']}: {doc['observation_count']} observation(s)"
