"""``quota should-run``."""

from loopx_site.core.cli import format_mapping, format_table
from turn_recall.cli import acting, add_scope

NAME = "should-run"
HELP = (
    "Print loopx_quota_decision_v0 for one Agent: the selected Todo, recent "
    "outcomes, next intent and the turn-start hook dispatch."
)


def arguments(parser):
    add_scope(
        parser,
        turn=None,  # optional: the packet then names its turn (agent_turn_recall checks it)
        execute="Executing admission: run the turn-start hooks and Agent Turn Recall "
        "for --turn-instance-id (default: read-only).",
    )


def run(command, *, goal_id, agent_id, turn_instance_id=None, execute=False, **_):
    from turn_recall import documents, services

    return documents.admission(
        services.admit(
            **services.scope(acting(goal_id, agent_id)),
            turn_instance_id=turn_instance_id,
            execute=execute,
        )
    )


def render(payload) -> str:
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
            "recall": (payload.get("reward_memory_recall") or {}).get("status"),
        }
    )
    hooks = payload.get("turn_start_hooks") or {}
    rows = hooks.get("results") or []
    table = format_table(rows, ["hook_id", "status", "observation_count", "error_code"])
    reads = "\n".join(r["command"] for r in hooks.get("required_reads") or [])
    return head + "\n\n" + table + ("\n\nrequired reads:\n" + reads if reads else "")
