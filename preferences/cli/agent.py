"""``manage.py semantic_preference agent read|remember|retire|history|migrate-scope``
(and the ``manage.py remember`` shortcut): parse, call one service, render."""

import argparse
from typing import Any

from loopx_site.core.cli import Subcommands, format_mapping, format_table
from preferences import selectors, services


def add_identity(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--goal-id", required=True)
    parser.add_argument("--agent-id", required=True)


def add_remember_arguments(parser: argparse.ArgumentParser) -> None:
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
    parser.add_argument("--execute", action="store_true", help="Commit (default: preview).")


def run_read(*, goal_id, agent_id, **_) -> dict[str, Any]:
    return services.read(goal_id=goal_id, agent_id=agent_id)


def run_remember(
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
) -> dict[str, Any]:
    return services.remember(
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


def run_retire(
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
) -> dict[str, Any]:
    return services.retire(
        goal_id=goal_id,
        agent_id=agent_id,
        key=key,
        source_ref=source_ref,
        source_quote=source_quote,
        expected_revision=expected_revision,
        operation_id=operation_id,
        execute=execute,
    )


def run_history(*, goal_id, agent_id, after_cursor, limit, **_) -> dict[str, Any]:
    return services.history(
        goal_id=goal_id, agent_id=agent_id, after_cursor=after_cursor, limit=limit
    )


def run_migrate_scope(
    *, goal_id, agent_id, operation_id, from_state_ref, from_instance_id, execute, **_
) -> dict[str, Any]:
    return services.migrate_scope(
        goal_id=goal_id,
        agent_id=agent_id,
        operation_id=operation_id,
        from_state_ref=from_state_ref,
        from_instance_id=from_instance_id,
        execute=execute,
    )


# -- text rendering -----------------------------------------------------------------------
def render_view(view: dict[str, Any]) -> str:
    head = (
        f"{view['goal_id']}/{view['agent_id']}  participating={view['participating']}  "
        f"revision={view['revision'] or 'none'}  "
        f"usage={view['usage']['subjects']}/{view['usage']['max_subjects']} keys, "
        f"{view['usage']['bytes']}/{view['usage']['max_bytes']} bytes"
    )
    rows = [{**item, "statement": item["statement"] or "-"} for item in view["current"]]
    table = format_table(
        rows, ["key", "state", "actionable", "revision", "expires_at", "statement"]
    )
    return f"{head}\n{table}"


def render_receipt(receipt: dict[str, Any]) -> str:
    summary = format_mapping(receipt, skip=("view", "original_receipt", "schema_version"))
    return f"{summary}\n\n{render_view(receipt['view'])}"


def render_history(page: dict[str, Any]) -> str:
    lines = []
    for e in page["entries"]:
        lines.append(
            f"#{e['sequence']} {e['created_at']} {e['kind']} {e['key']} "
            f"rev={e['resulting_revision']} op={e['operation_id']} "
            f"prev={e['predecessor_operation_id'] or '-'}"
        )
        if e["statement"] is not None:
            lines.append(f"    {e['statement']}")
    lines.append(f"next_cursor: {page['next_cursor'] or '-'}")
    return "\n".join(lines) if page["entries"] else "(no entries)\nnext_cursor: -"


def register(sub: Subcommands) -> None:
    read = sub.add("read", "Read the exact scope's current view.", run=run_read, render=render_view)
    add_identity(read)

    remember = sub.add(
        "remember",
        "Remember or correct a preference (preview by default).",
        run=run_remember,
        render=render_receipt,
    )
    add_remember_arguments(remember)

    retire = sub.add(
        "retire",
        "Retire a preference, leaving a tombstone (preview by default).",
        run=run_retire,
        render=render_receipt,
    )
    add_identity(retire)
    retire.add_argument("--key", required=True)
    retire.add_argument("--source-ref", required=True)
    retire.add_argument("--source-quote", required=True)
    retire.add_argument("--expected-revision", required=True)
    retire.add_argument("--operation-id", required=True)
    retire.add_argument("--execute", action="store_true", help="Commit (default: preview).")

    hist = sub.add(
        "history", "Page through the journal, oldest first.", run=run_history, render=render_history
    )
    add_identity(hist)
    hist.add_argument("--after-cursor", help="next_cursor of the previous page.")
    hist.add_argument(
        "--limit",
        type=_limit,
        default=selectors.HISTORY_DEFAULT_LIMIT,
        help=f"1-{selectors.HISTORY_MAX_LIMIT} (default 50).",
    )

    migrate = sub.add(
        "migrate-scope",
        "Copy current subjects from an earlier scope of this Goal/Agent (after its state "
        "ref moved) into the current, empty scope, with lineage.",
        run=run_migrate_scope,
    )
    add_identity(migrate)
    migrate.add_argument("--operation-id", required=True)
    migrate.add_argument("--from-state-ref", help="The earlier Goal state ref.")
    migrate.add_argument("--from-instance-id", help="The earlier Goal instance id.")
    migrate.add_argument("--execute", action="store_true", help="Commit (default: preview).")


def _limit(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("--limit must be a whole number") from None
