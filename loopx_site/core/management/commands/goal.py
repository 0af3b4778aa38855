from loopx_site.core import selectors, services
from loopx_site.core.cli import LoopxCommand, format_table


class Command(LoopxCommand):
    help = "Register Goals and their Agents, or list them."

    def add_command_arguments(self, parser):
        sub = self.add_subcommands(parser)
        register = sub.add("register", "Register a Goal and its Agents (idempotent).")
        register.add_argument("--goal-id", required=True)
        register.add_argument(
            "--agent-id",
            action="append",
            required=True,
            dest="agent_ids",
            help="Repeat for each Agent of the Goal.",
        )
        register.add_argument("--state-ref", help="Opaque reference to the Goal's state.")
        register.add_argument("--instance-id", help="Goal instance identity, when present.")
        sub.add("list", "List registered Goals with their Agents.")

    def run_register(self, *, goal_id, agent_ids, state_ref, instance_id, **_):
        result = services.register_goal(
            goal_id=goal_id, agent_ids=agent_ids, state_ref=state_ref, instance_id=instance_id
        )
        return {
            "schema_version": "loopx_goal_registration_v0",
            "created": result.created,
            "added_agents": result.added_agents,
            "goal": selectors.goal_payload(result.goal),
        }

    def run_list(self, **_):
        return {
            "schema_version": "loopx_goal_list_v0",
            "goals": [selectors.goal_payload(g) for g in selectors.list_goals()],
        }

    def render_text(self, payload, *, subcommand=None):
        goals = payload["goals"] if subcommand == "list" else [payload["goal"]]
        rows = [{**g, "agents": ",".join(g["agents"])} for g in goals]
        return format_table(rows, ["goal_id", "agents", "state_ref", "instance_id", "updated_at"])
