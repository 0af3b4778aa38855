"""``semantic_preference agent migrate-scope``."""

from preferences.cli.agent.common import add_execute, add_identity, render_current

NAME = "migrate-scope"
HELP = (
    "Copy current subjects from an earlier scope of this Goal/Agent (after its state "
    "ref moved) into the current, empty scope, with lineage."
)


def arguments(parser):
    add_identity(parser)
    parser.add_argument("--operation-id", required=True)
    parser.add_argument("--from-state-ref", help="The earlier Goal state ref.")
    parser.add_argument("--from-instance-id", help="The earlier Goal instance id.")
    add_execute(parser)


def run(
    command, *, goal_id, agent_id, operation_id, from_state_ref, from_instance_id, execute, **_
):
    from preferences import documents, services

    return documents.respond(
        documents.migration,
        services.migrate_scope,
        goal_id=goal_id,
        agent_id=agent_id,
        operation_id=operation_id,
        from_state_ref=from_state_ref,
        from_instance_id=from_instance_id,
        execute=execute,
    )


def render(doc) -> str:
    line = (
        f"{doc['status']}: operation {doc['operation_id']} copied "
        f"{', '.join(doc.get('copied_keys') or []) or 'nothing'}"
    )
    return f"{line}\n\n{render_current(doc)}"
