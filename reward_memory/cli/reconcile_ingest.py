"""``reward_memory reconcile-ingest``."""

from loopx_site.core.cli import add_agent_arguments
from reward_memory import services
from reward_memory.documents import ingest as documents

NAME = "reconcile-ingest"
HELP = "Retry this Agent's pending ingest sidecars (exact readback)."


def arguments(parser):
    add_agent_arguments(parser)


def run(command, *, goal_id, agent_id, **_):
    return documents.reconciliation(
        services.reconcile_pending_ingests(goal_id=goal_id, agent_id=agent_id)
    )
