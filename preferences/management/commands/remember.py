from loopx_site.core.cli import LoopxCommand
from preferences.cli import agent as agent_cli


class Command(LoopxCommand):
    help = "Shortcut for `semantic_preference agent remember` (same arguments)."
    error_area = "semantic_preference"

    def add_command_arguments(self, parser):
        agent_cli.add_remember_arguments(parser)

    def run(self, **options):
        return agent_cli.run_remember(**options)

    def render_text(self, payload, *, subcommand=None):
        return agent_cli.render_write(payload)
