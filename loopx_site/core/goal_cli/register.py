"""``goal register``."""

from loopx_site.core import documents, services
from loopx_site.core.cli import call_with_options
from loopx_site.core.goal_cli.common import goals_table

NAME = "register"
HELP = "Register a Goal and its Agents (idempotent). Previews unless --execute."


def arguments(parser):
    parser.add_argument("--goal-id", required=True)
    parser.add_argument(
        "--agent-id",
        action="append",
        required=True,
        dest="agent_ids",
        help="Repeat for each Agent of the Goal.",
    )
    parser.add_argument(
        "--state-ref",
        help="Opaque reference to the Goal's state. Changing it moves every Agent to a "
        "new, empty preference scope until migrate-scope.",
    )
    parser.add_argument("--instance-id", help="Goal instance identity, when present.")
    parser.add_argument(
        "--execute", action="store_true", help="Write; without it nothing is written."
    )


def run(command, **options):
    return documents.goal_registration(call_with_options(services.register_goal, options))


def render(payload) -> str:
    lines = [f"status: {payload['status']}", goals_table([payload["goal"]])]
    lines += [f"warning: {w}" for w in payload["warnings"]]
    if payload["status"] == "preview":
        lines.append("preview only: nothing written; add --execute to register.")
    return "\n".join(lines)
