from loopx_site.core import documents, services
from loopx_site.core.cli import LoopxCommand, call_with_options


class Command(LoopxCommand):
    help = "Issue a host API token scoped to one Goal (optionally one Agent)."

    def add_command_arguments(self, parser):
        sub = self.add_subcommands(parser)
        create = sub.add(
            "create", "Create a token (preview unless --execute); the secret is printed once."
        )
        create.add_argument("--goal-id", required=True)
        create.add_argument("--agent-id")
        create.add_argument("--label", default="")
        create.add_argument(
            "--execute", action="store_true", help="Issue the token; without it nothing is written."
        )

    def run_create(self, **options):
        return documents.host_token(call_with_options(services.issue_token, options))
