"""``reward_memory experiment-status``."""

from loopx_site.core.cli import add_agent_arguments
from reward_memory import services
from reward_memory.documents import experiments as documents

NAME = "experiment-status"
HELP = "The Agent's Reward Memory experiment status."


def arguments(parser):
    add_agent_arguments(parser)


def run(command, *, goal_id, agent_id, **_):
    return documents.status(services.experiment_status(goal_id=goal_id, agent_id=agent_id))
