"""``manage.py semantic_preference agent read|observe|remember|retire|history|migrate-scope``
(and the ``manage.py remember`` shortcut): parse, call one service, render LoopX's
document through ``preferences.documents``."""

import argparse
import importlib
from typing import Any

from loopx_site.core.cli import Subcommands, format_table
from preferences import documents, selectors


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


def _runner(render, service, *options: str):
    """A handler: the scope and these options → one journal service → its document.
    ``service`` is a selector, or the name of a ``preferences.services`` function
    (imported when a write runs: a read never loads the write path)."""

    def run(*, goal_id, agent_id, **given) -> dict[str, Any]:
        arguments = {name: given[name] for name in options}
        call = service
        if isinstance(call, str):
            call = getattr(importlib.import_module("preferences.services"), call)
        return documents.respond(render, call, goal_id=goal_id, agent_id=agent_id, **arguments)

    return run


_WRITE = ("key", "source_ref", "source_quote", "expected_revision", "operation_id", "execute")
run_read = _runner(documents.read, "read")
run_observe = _runner(documents.observe, selectors.observe)
run_remember = _runner(documents.write, "remember", "statement", "expires_at", *_WRITE)
run_retire = _runner(documents.write, "retire", *_WRITE)
run_history = _runner(documents.history, "history", "after_cursor", "limit")
run_migrate_scope = _runner(
    documents.migration,
    "migrate_scope",
    "operation_id",
    "from_state_ref",
    "from_instance_id",
    "execute",
)


# -- text rendering -----------------------------------------------------------------------
def render_current(doc: dict[str, Any]) -> str:
    current, usage = doc["current"], doc.get("usage") or {}
    head = (
        f"{doc.get('goal_id')}/{doc.get('agent_id')}  status={doc['status']}  "
        f"revision={current['revision'] or 'none'}  authority={current['authority']}"
    )
    if usage:
        head += (
            f"  usage={usage['subjects']}/{usage['max_subjects']} keys, "
            f"{usage['bytes']}/{usage['max_bytes']} bytes"
        )
    rows = [{**item, "statement": item.get("statement") or "-"} for item in current["items"]]
    table = format_table(
        rows, ["key", "state", "operation_id", "recorded_at", "expires_at", "statement"]
    )
    return f"{head}\n{table}"


def render_write(doc: dict[str, Any]) -> str:
    if doc["status"] == "preview":
        p = doc["proposed"]
        line = f"preview: would write {p['key']} ({p['state']}) as operation {p['operation_id']}"
    else:
        r = doc["receipt"]
        line = (
            f"{doc['status']}: {r['key']} ({r['state']}) operation {r['operation_id']} "
            f"supersedes {r['supersedes_operation_id'] or '-'}"
        )
    return f"{line}\n\n{render_current(doc)}"


def render_observe(doc: dict[str, Any]) -> str:
    return f"{doc['status']}: {doc['observation_count']} observation(s)"


def render_history(doc: dict[str, Any]) -> str:
    lines = []
    for e in doc["events"]:
        lines.append(
            f"#{e['sequence']} {e['recorded_at']} {e['kind']} {e['key']} "
            f"rev={e['revision']} op={e['operation_id']} "
            f"supersedes={e['supersedes_operation_id'] or '-'}"
        )
        if e["statement"] is not None:
            lines.append(f"    {e['statement']}")
    if not doc["events"]:
        lines.append("(no events)")
    lines.append(f"has_more: {str(doc['has_more']).lower()}")
    lines.append(f"next_cursor: {doc['next_cursor'] or '-'}")
    return "\n".join(lines)


def render_migration(doc: dict[str, Any]) -> str:
    line = (
        f"{doc['status']}: operation {doc['operation_id']} copied "
        f"{', '.join(doc.get('copied_keys') or []) or 'nothing'}"
    )
    return f"{line}\n\n{render_current(doc)}"


def register(sub: Subcommands) -> None:
    read = sub.add(
        "read", "Read the exact scope's current view.", run=run_read, render=render_current
    )
    add_identity(read)
    accept_loopx_flags(read)

    observe = sub.add(
        "observe",
        "Content-free: does this scope hold preferences, and how many (no statements).",
        run=run_observe,
        render=render_observe,
    )
    add_identity(observe)
    accept_loopx_flags(observe)

    remember = sub.add(
        "remember",
        "Remember or correct a preference (preview by default).",
        run=run_remember,
        render=render_write,
    )
    add_remember_arguments(remember)
    accept_loopx_flags(remember)

    retire = sub.add(
        "retire",
        "Retire a preference, leaving a tombstone (preview by default).",
        run=run_retire,
        render=render_write,
    )
    add_identity(retire)
    retire.add_argument("--key", required=True)
    retire.add_argument("--source-ref", required=True)
    retire.add_argument("--source-quote", required=True)
    retire.add_argument("--expected-revision", required=True)
    retire.add_argument("--operation-id", required=True)
    retire.add_argument("--execute", action="store_true", help="Commit (default: preview).")
    accept_loopx_flags(retire)

    hist = sub.add(
        "history", "Page through the journal, oldest first.", run=run_history, render=render_history
    )
    add_identity(hist)
    hist.add_argument("--after-cursor", help="next_cursor of the previous page.")
    hist.add_argument(
        "--limit",
        type=_limit,
        default=selectors.HISTORY_PAGE,
        help=f"1-{selectors.HISTORY_MAX_LIMIT} (default {selectors.HISTORY_PAGE}).",
    )
    accept_loopx_flags(hist)

    migrate = sub.add(
        "migrate-scope",
        "Copy current subjects from an earlier scope of this Goal/Agent (after its state "
        "ref moved) into the current, empty scope, with lineage.",
        run=run_migrate_scope,
        render=render_migration,
    )
    add_identity(migrate)
    migrate.add_argument("--operation-id", required=True)
    migrate.add_argument("--from-state-ref", help="The earlier Goal state ref.")
    migrate.add_argument("--from-instance-id", help="The earlier Goal instance id.")
    migrate.add_argument("--execute", action="store_true", help="Commit (default: preview).")


#: LoopX's ``agent`` command has one parser for every action: each of these flags is
#: accepted on every action and ignored where the action has no use for it (a host may
#: build one argv for remember and retire). Ours accepts and ignores them the same way.
LOOPX_AGENT_FLAGS = (
    "--key",
    "--statement",
    "--source-ref",
    "--source-quote",
    "--expected-revision",
    "--operation-id",
    "--expires-at",
    "--after-cursor",
)
IGNORED = "Accepted and ignored by this action, as LoopX does."


def accept_loopx_flags(parser: argparse.ArgumentParser, *, execute: bool = True) -> None:
    """Add LoopX's shared agent flags this action does not use, as ignored options."""
    known = parser._option_string_actions  # argparse's own index of option strings
    flags = [*LOOPX_AGENT_FLAGS, *(("--execute",) if execute else ())]
    for flag in flags:
        if flag in known:
            continue
        dest = "ignored_" + flag.lstrip("-").replace("-", "_")
        if flag == "--execute":
            parser.add_argument(flag, dest=dest, action="store_true", help=IGNORED)
        else:
            parser.add_argument(flag, dest=dest, help=IGNORED)


def _limit(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("--limit must be a whole number") from None
