"""``hooks replay``."""

from hooks import documents, services
from loopx_site.core.cli import call_with_options, format_table

NAME = "replay"
HELP = (
    "Recover the hook phase of committed receipts that have no sidecar checkpoint "
    "(and retry failed dispatches with attempts left). Preview unless --execute."
)


def arguments(parser):
    parser.add_argument("--goal-id")
    parser.add_argument("--receipt-id")
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument(
        "--no-retry-failed", dest="retry_failed", action="store_false", default=True
    )
    parser.add_argument("--execute", action="store_true")


def run(command, **options):
    return documents.replay_outcome(call_with_options(services.replay, options))


def render(payload) -> str:
    rows = [
        {**r, "dispatches": len(r.get("dispatches", r.get("planned_dispatch_ids", [])))}
        for r in payload["receipts"]
    ]
    return format_table(rows, ["receipt_id", "reason", "phase_status", "dispatches"])
