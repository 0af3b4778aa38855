"""What the ``semantic_preference agent`` subcommands share: the scope options, LoopX's
shared agent flags and the text form of a scope's current view."""

import argparse
from typing import Any

from loopx_site.core.cli import format_table


def add_identity(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--goal-id", required=True)
    parser.add_argument("--agent-id", required=True)


def add_execute(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--execute", action="store_true", help="Commit (default: preview).")


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
    """A remember's or retire's text: what it wrote (or would), then the current view."""
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
