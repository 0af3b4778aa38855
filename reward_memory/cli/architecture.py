"""``reward_memory architecture``."""

from reward_memory import contracts

NAME = "architecture"
HELP = "Print the machine-readable Reward Memory contract."


def run(command, **_):
    return contracts.architecture()
