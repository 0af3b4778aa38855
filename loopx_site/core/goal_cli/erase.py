"""``goal erase``."""

from loopx_site.core import documents
from loopx_site.core.cli import call_with_options

NAME = "erase"
HELP = (
    "Erase every piece of a Goal's (or one Agent's) memory, keeping only hashed "
    "tombstones, and print the erasure receipt. Previews unless --execute."
)


def arguments(parser):
    parser.add_argument("--goal-id", required=True)
    parser.add_argument("--agent-id", help="Erase only this Agent's content.")
    parser.add_argument(
        "--execute", action="store_true", help="Erase; without it nothing is written."
    )


def run(command, **options):
    from loopx_site.core import erasure  # every app's erasure: loaded only to erase

    return documents.goal_erasure(call_with_options(erasure.erase, options))


def render(payload) -> str:
    scope = payload["goal_id"] + (f"/{payload['agent_id']}" if payload["agent_id"] else "")
    lines = [f"status: {payload['status']}  scope: {scope}"]
    lines += [f"  {table}: {count}" for table, count in payload["removed"].items()]
    lines.append(f"total rows: {payload['total_rows']}")
    deletes = payload["provider_deletes"]
    lines.append(
        "provider deletes: " + (", ".join(f"{k} {v}" for k, v in deletes.items()) or "none")
    )
    if payload["status"] == "preview":
        lines.append("preview only: nothing written; add --execute to erase.")
    return "\n".join(lines)
