from loopx_site.core import clock, services
from loopx_site.core.cli import LoopxCommand


class Command(LoopxCommand):
    help = "Issue a host API token scoped to one Goal (optionally one Agent)."

    def add_command_arguments(self, parser):
        sub = self.add_subcommands(parser)
        create = sub.add("create", "Create a token; the secret is printed once.")
        create.add_argument("--goal-id", required=True)
        create.add_argument("--agent-id")
        create.add_argument("--label", default="")

    def run_create(self, *, goal_id, agent_id, label, **_):
        issued = services.create_token(goal_id=goal_id, agent_id=agent_id, label=label)
        return {
            "schema_version": "loopx_host_token_v0",
            "token": issued.secret,
            "prefix": issued.token.prefix,
            "goal_id": goal_id,
            "agent_id": agent_id,
            "created_at": clock.iso(issued.token.created_at),
            "note": "Shown once; only its sha256 is stored. Send as 'Authorization: Bearer …'.",
        }
