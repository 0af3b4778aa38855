from loopx_site.core import documents, selectors, services
from loopx_site.core.cli import LoopxCommand, call_with_options, format_table


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

    def run_register(self, **options):
        return documents.goal_registration(call_with_options(services.register_goal, options))

    def run_list(self, **_):
        return documents.goal_list(selectors.list_goals())

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
