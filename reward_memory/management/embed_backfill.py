"""``manage.py reward_memory embed-backfill``: store the dense vector of every local
provider document written before hybrid ranking (a thin adapter; ``add`` wires it into
the ``reward_memory`` command)."""

from typing import Any

from loopx_site.core import progress
from loopx_site.core.cli import add_execute_argument
from reward_memory.models import LocalProviderDocument
from reward_memory.providers import local

HELP = "Compute the embeddings of local provider documents that have none (preview by default)."


def add(sub) -> None:
    parser = sub.add("embed-backfill", HELP, run=run)
    add_execute_argument(parser, "Compute and store the vectors.")


def run(*, execute=False, **_) -> dict[str, Any]:
    missing = LocalProviderDocument.objects.filter(embedding__isnull=True).count()
    filled = local.backfill_embeddings(track=progress.track) if execute else 0
    return {
        "schema_version": "reward_memory_embed_backfill_v0",
        "executed": bool(execute),
        "missing": missing,
        "filled": filled,
    }
