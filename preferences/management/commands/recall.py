from loopx_site.core.cli import LoopxCommand
from preferences.cli import recall as recall_cli


class Command(LoopxCommand):
    help = "Shortcut for `semantic_preference recall` (same arguments)."
    error_area = "semantic_preference"

    def add_command_arguments(self, parser):
        recall_cli.add_recall_arguments(parser)

    def run(self, **options):
        return recall_cli.run_recall(**options)

    def render_text(self, payload, *, subcommand=None):
        return recall_cli.render_recall(payload)
