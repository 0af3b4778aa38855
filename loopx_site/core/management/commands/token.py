from loopx_site.core import clock, services
from loopx_site.core.cli import LoopxCommand


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

    def run_create(self, *, goal_id, agent_id, label, execute, **_):
        if not execute:
            services.check_token_request(goal_id=goal_id, agent_id=agent_id, label=label)
            return {
                "schema_version": "loopx_host_token_v0",
                "status": "preview",
                "execute": False,
                "goal_id": goal_id,
                "agent_id": agent_id,
                "label": label,
                "note": "Preview only: nothing written. Add --execute to issue the token.",
            }
        issued = services.create_token(goal_id=goal_id, agent_id=agent_id, label=label)
        return {
            "schema_version": "loopx_host_token_v0",
            "status": "issued",
            "execute": True,
            "token": issued.secret,
            "prefix": issued.token.prefix,
            "goal_id": goal_id,
            "agent_id": agent_id,
            "label": label,
            "created_at": clock.iso(issued.token.created_at),
            "note": "Shown once; only its sha256 is stored. Send as 'Authorization: Bearer …'.",
        }
