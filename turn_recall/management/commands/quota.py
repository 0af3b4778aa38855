from loopx_site.core.cli import LoopxCommand, format_mapping, format_table
from turn_recall import contracts as c
from turn_recall import quota


class Command(LoopxCommand):
    help = "The quota decision packet a host routes an autonomous turn with (read-only)."
    error_area = c.AREA

    def add_command_arguments(self, parser):
        sub = self.add_subcommands(parser)
        run = sub.add(
            "should-run",
            "Print loopx_quota_decision_v0 for one Agent: the selected Todo, recent "
            "outcomes, next intent and the turn-start hook dispatch.",
        )
        run.add_argument("--goal-id", required=True)
        run.add_argument("--agent-id", required=True)

    def run_should_run(self, *, goal_id, agent_id, **_):
        return quota.should_run(goal_id=goal_id, agent_id=agent_id)

    def render_text(self, payload, *, subcommand=None):
        todo = payload.get("selected_todo") or {}
        head = format_mapping(
            {
                "decision": payload["decision"],
                "goal_id": payload["goal_id"],
                "agent_id": payload["agent_id"],
                "phase": payload["lifecycle_phase"],
                "todo": todo.get("todo_id"),
                "next_intent": payload["next_intent"],
                "capsule": "signed" if payload.get("turn_capsule") else None,
            }
        )
        hooks = payload.get("turn_start_hooks") or {}
        rows = hooks.get("results") or []
        table = format_table(rows, ["hook_id", "status", "observation_count", "error_code"])
        reads = "\n".join(r["command"] for r in hooks.get("required_reads") or [])
        return head + "\n\n" + table + ("\n\nrequired reads:\n" + reads if reads else "")
