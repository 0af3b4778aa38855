from loopx_site.core import selectors, services
from loopx_site.core.cli import LoopxCommand, format_table


class Command(LoopxCommand):
    help = (
        "Register Goals and their Agents (operator action; preview unless --execute), or list them."
    )

    def add_command_arguments(self, parser):
        sub = self.add_subcommands(parser)
        register = sub.add(
            "register",
            "Register a Goal and its Agents (idempotent). Previews unless --execute.",
        )
        register.add_argument("--goal-id", required=True)
        register.add_argument(
            "--agent-id",
            action="append",
            required=True,
            dest="agent_ids",
            help="Repeat for each Agent of the Goal.",
        )
        register.add_argument(
            "--state-ref",
            help="Opaque reference to the Goal's state. Changing it moves every Agent to a "
            "new, empty preference scope until migrate-scope.",
        )
        register.add_argument("--instance-id", help="Goal instance identity, when present.")
        register.add_argument(
            "--execute", action="store_true", help="Write; without it nothing is written."
        )
        sub.add("list", "List registered Goals with their Agents.")

    def run_register(self, *, goal_id, agent_ids, state_ref, instance_id, execute, **_):
        result = services.register_goal(
            goal_id=goal_id,
            agent_ids=agent_ids,
            state_ref=state_ref,
            instance_id=instance_id,
            execute=execute,
        )
        return services.registration_payload(result)

    def run_list(self, **_):
        return {
            "schema_version": "loopx_goal_list_v0",
            "goals": [selectors.goal_payload(g) for g in selectors.list_goals()],
        }

    def render_text(self, payload, *, subcommand=None):
        goals = payload["goals"] if subcommand == "list" else [payload["goal"]]
        rows = [{**g, "agents": ",".join(g["agents"])} for g in goals]
        table = format_table(rows, ["goal_id", "agents", "state_ref", "instance_id", "updated_at"])
        if subcommand == "list":
            return table
        lines = [f"status: {payload['status']}", table]
        lines += [f"warning: {w}" for w in payload["warnings"]]
        if payload["status"] == "preview":
            lines.append("preview only: nothing written; add --execute to register.")
        return "\n".join(lines)
