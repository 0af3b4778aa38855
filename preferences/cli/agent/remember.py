"""``semantic_preference agent remember`` (and the ``manage.py remember`` shortcut)."""

from preferences.cli.agent.common import (
    accept_loopx_flags,
    add_execute,
    add_identity,
    render_write,
)

NAME = "remember"
HELP = "Remember or correct a preference (preview by default)."
render = render_write


def add_remember_arguments(parser) -> None:
    """The options of ``remember`` itself (the shortcut has these and no others)."""
    add_identity(parser)
    parser.add_argument("--key", required=True, help="Stable subject, e.g. review.collaboration")
    parser.add_argument("--statement", required=True, help="The owner's instruction (1-1200).")
    parser.add_argument("--source-ref", required=True, help="Where the owner said it.")
    parser.add_argument("--source-quote", required=True, help="The owner's exact words.")
    parser.add_argument(
        "--expected-revision",
        required=True,
        help="'none' for an empty store, else the revision from a fresh read.",
    )
    parser.add_argument("--operation-id", required=True, help="Stable id; retry with the same.")
    parser.add_argument("--expires-at", help="UTC timestamp, e.g. 2026-12-31T00:00:00Z")
    add_execute(parser)


def arguments(parser):
    add_remember_arguments(parser)
    accept_loopx_flags(parser)


def run(
    command,
    *,
    goal_id,
    agent_id,
    key,
    statement,
    source_ref,
    source_quote,
    expected_revision,
    operation_id,
    expires_at,
    execute,
    **_,
):
    from preferences import documents, services

    return documents.respond(
        documents.write,
        services.remember,
        goal_id=goal_id,
        agent_id=agent_id,
        key=key,
        statement=statement,
        source_ref=source_ref,
        source_quote=source_quote,
        expected_revision=expected_revision,
        operation_id=operation_id,
        expires_at=expires_at,
        execute=execute,
    )
