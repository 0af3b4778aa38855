"""``turn run-once``."""

from loopx_site.core.cli import format_mapping
from turn_recall.cli import add_scope

NAME = "run-once"
HELP = (
    "Compose quota should-run and agent turn recall into the host packet for one "
    "turn (recall previews unless --execute)."
)


def arguments(parser):
    add_scope(parser, execute="Recall (default: preview).")


def run(command, *, goal_id, agent_id, turn_instance_id, execute, **_):
    from turn_recall import documents, services

    return documents.host_packet(
        services.run_once(
            goal_id=goal_id, agent_id=agent_id, turn_instance_id=turn_instance_id, execute=execute
        )
    )


def render(payload) -> str:
    task = payload.get("task") or {}
    head = format_mapping(
        {
            "status": payload["status"],
            "recall": payload["agent_turn_recall"]["status"],
            "todo": task.get("todo_id"),
        }
    )
    return head + ("\n\n" + task["body"] if task.get("body") else "")
