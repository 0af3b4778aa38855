from loopx_site.core.cli import LoopxCommand
from preferences.cli import agent as agent_cli
from preferences.cli import recall as recall_cli


class Command(LoopxCommand):
    help = (
        "Explicit Agent preferences (agent read|observe|remember|retire|history|migrate-scope) and "
        "the optional semantic preference recall hook."
    )
    error_area = "semantic_preference"

    def add_command_arguments(self, parser):
        sub = self.add_subcommands(parser)
        agent_cli.register(sub.group("agent", "The explicit per-(Goal, Agent) preference journal."))
        recall_cli.register(sub)
