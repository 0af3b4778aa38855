"""``semantic_preference agent read``."""

from preferences.cli.agent.common import accept_loopx_flags, add_identity, render_current

NAME = "read"
HELP = "Read the exact scope's current view."
render = render_current


def arguments(parser):
    add_identity(parser)
    accept_loopx_flags(parser)


def run(command, *, goal_id, agent_id, **_):
    from preferences import documents, services

    return documents.respond(documents.read, services.read, goal_id=goal_id, agent_id=agent_id)
