"""``token create``."""

from loopx_site.core import documents, services
from loopx_site.core.cli import call_with_options

NAME = "create"
HELP = "Create a token (preview unless --execute); the secret is printed once."


def arguments(parser):
    parser.add_argument("--goal-id", required=True)
    parser.add_argument("--agent-id")
    parser.add_argument("--label", default="")
    parser.add_argument(
        "--execute", action="store_true", help="Issue the token; without it nothing is written."
    )


def run(command, **options):
    return documents.host_token(call_with_options(services.issue_token, options))
