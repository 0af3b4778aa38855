"""``hooks execute-intents``."""

from hooks import documents, executors, services
from loopx_site.core.cli import call_with_options, format_mapping, format_table

NAME = "execute-intents"
HELP = (
    "Admit pending intents through a governed executor and record its decision "
    "(no network or sink call). Preview unless --execute."
)


def arguments(parser):
    parser.add_argument("--executor", required=True, choices=sorted(executors.EXECUTORS))
    parser.add_argument("--goal-id")
    parser.add_argument("--intent-id", action="append", dest="intent_ids")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--execute", action="store_true")


def run(command, **options):
    return documents.execution_run(call_with_options(services.execute_intents, options))


def render(payload) -> str:
    rows = [{**d, "decision": (d["decision"] or {}).get("decision")} for d in payload["decisions"]]
    head = format_mapping(payload, skip=("decisions",))
    return head + "\n\n" + format_table(rows, ["intent_id", "action", "reason", "decision"])
