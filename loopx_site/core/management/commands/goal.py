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
        erase = sub.add(
            "erase",
            "Erase every piece of a Goal's (or one Agent's) memory, keeping only hashed "
            "tombstones, and print the erasure receipt. Previews unless --execute.",
        )
        erase.add_argument("--goal-id", required=True)
        erase.add_argument("--agent-id", help="Erase only this Agent's content.")
        erase.add_argument(
            "--execute", action="store_true", help="Erase; without it nothing is written."
        )

    def run_register(self, **options):
        return documents.goal_registration(call_with_options(services.register_goal, options))

    def run_list(self, **_):
        return documents.goal_list(selectors.list_goals())

    def run_erase(self, **options):
        from loopx_site.core import erasure

        return documents.goal_erasure(call_with_options(erasure.erase, options))

    def render_text(self, payload, *, subcommand=None):
        if subcommand == "erase":
            return erasure_text(payload)
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


def erasure_text(payload) -> str:
    scope = payload["goal_id"] + (f"/{payload['agent_id']}" if payload["agent_id"] else "")
    lines = [f"status: {payload['status']}  scope: {scope}"]
    lines += [f"  {table}: {count}" for table, count in payload["removed"].items()]
    lines.append(f"total rows: {payload['total_rows']}")
    deletes = payload["provider_deletes"]
    lines.append(
        "provider deletes: " + (", ".join(f"{k} {v}" for k, v in deletes.items()) or "none")
    )
    if payload["status"] == "preview":
        lines.append("preview only: nothing written; add --execute to erase.")
    return "\n".join(lines)
