"""``semantic_preference agent retire``."""

from preferences.cli.agent.common import (
    accept_loopx_flags,
    add_execute,
    add_identity,
    render_write,
)

NAME = "retire"
HELP = "Retire a preference, leaving a tombstone (preview by default)."
render = render_write


def arguments(parser):
    add_identity(parser)
    parser.add_argument("--key", required=True)
    parser.add_argument("--source-ref", required=True)
    parser.add_argument("--source-quote", required=True)
    parser.add_argument("--expected-revision", required=True)
    parser.add_argument("--operation-id", required=True)
    add_execute(parser)
    accept_loopx_flags(parser)


def run(
    command,
    *,
    goal_id,
    agent_id,
    key,
    source_ref,
    source_quote,
    expected_revision,
    operation_id,
    execute,
    **_,
):
    from preferences import documents, services

    return documents.respond(
        documents.write,
        services.retire,
        goal_id=goal_id,
        agent_id=agent_id,
        key=key,
        source_ref=source_ref,
        source_quote=source_quote,
        expected_revision=expected_revision,
        operation_id=operation_id,
        execute=execute,
    )
