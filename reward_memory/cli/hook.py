"""``reward_memory hook``."""

from loopx_site.core import access
from loopx_site.core.cli import (
    add_agent_arguments,
    add_execute_argument,
    call_with_options,
    format_mapping,
    format_table,
)
from reward_memory import services
from reward_memory.documents import boundary_hooks as documents
from reward_memory.domain.inputs import read_json
from reward_memory.errors import AREA

NAME = "hook"
HELP = (
    "Run the automatic Reward Memory hook at a declared module boundary (planned unless --execute)."
)


def arguments(parser):
    parser.add_argument("--boundary", required=True, choices=list(services.DECLARED_BOUNDARIES))
    add_agent_arguments(parser)
    parser.add_argument("--query", action="append", dest="queries", default=[])
    parser.add_argument("--event", help="A compact event JSON file to ingest (or -).")
    add_execute_argument(parser)


def run(command, *, goal_id, agent_id, event=None, **options):
    acting = access.SHELL.acting_for(goal_id, agent_id, area=AREA)
    run = call_with_options(
        services.run_boundary_hook, options, goal_id=acting.goal_id,
        agent_id=acting.agent_id, viewer=acting.viewer,
        event=read_json(event) if event else None,
    )  # fmt: skip
    return documents.boundary_hook(run)


def render(payload):
    head = format_mapping(payload, skip=("context", "application_receipt", "automation"))
    rows = payload["context"]["guidance"]
    return f"{head}\n" + format_table(rows, ["memory_class", "summary"])
