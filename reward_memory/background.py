"""Reward Memory's background sweeps (run by ``reward_memory.tasks``; services).

* ``reconcile_ingests`` — ``reward_memory reconcile-ingest`` for every Agent with
  unresolved ``PendingIngest`` rows, one claimed Agent at a time: its unresolved rows are
  locked (``SKIP LOCKED`` on PostgreSQL) for the whole retry, so with N workers each
  Agent's sidecars are retried by one of them and the others skip that Agent. The
  ``IngestEvent`` row lock and unique event key still decide should a turn-start
  reconciliation meet a worker: same event, same ``observed_at``, one record.
* ``expire_records`` — ``reward_memory expire-records --execute``: each due record is
  moved under its own row lock with its state re-checked, so a record expires once
  however many workers sweep (a racing worker's transition finds it closed, skips it).
* ``provider_deletions`` — the outbox of provider deletes of closed records
  (``services.provider_deletions.sweep``): each due row claimed with ``SKIP LOCKED``.
"""

from collections import Counter

from django.db import transaction

from loopx_site.core.background import claim
from reward_memory import services
from reward_memory.errors import invalid
from reward_memory.models import PendingIngest
from reward_memory.services import provider_deletions as outbox

MAX_AGENTS = 200
RECONCILE_COUNTS = ("attempted", "activated", "still_pending", "blocked")


def reconcile_ingests(*, limit_agents: int = 50) -> dict[str, int]:
    """Retry the pending ingests of up to ``limit_agents`` Agents (oldest first)."""
    if (
        isinstance(limit_agents, bool)
        or not isinstance(limit_agents, int)
        or not 1 <= limit_agents <= MAX_AGENTS
    ):
        raise invalid("limit_agents", f"limit_agents must be 1-{MAX_AGENTS}")
    unresolved = PendingIngest.objects.filter(resolved_at__isnull=True)
    agents = list(
        unresolved.order_by("agent_id")
        .values_list("agent_id", "goal__goal_id", "agent__agent_id")
        .distinct()[:limit_agents]
    )
    counts = Counter(agents=len(agents), claimed=0, skipped=0, automatic_ingest_off=0)
    counts.update(dict.fromkeys(RECONCILE_COUNTS, 0))
    for agent_pk, goal_id, agent_id in agents:
        with transaction.atomic():
            held = list(claim(unresolved.filter(agent_id=agent_pk)).values_list("pk", flat=True))
            if not held:  # another worker has this Agent, or it was resolved since
                counts["skipped"] += 1
                continue
            summary = services.reconcile_pending_ingests(goal_id=goal_id, agent_id=agent_id)
        counts["claimed"] += 1
        if summary.skipped == "automatic_ingest_off":
            counts["automatic_ingest_off"] += 1
        for key in RECONCILE_COUNTS:
            counts[key] += getattr(summary, key)
    return dict(counts)


def expire_records(*, corpus_id: str | None = None) -> dict[str, int]:
    """Close every active record whose expiry has passed (one bounded sweep)."""
    sweep = services.expire_due_records(corpus_id=corpus_id, execute=True)
    return {"due": len(sweep.due), "expired": len(sweep.expired)}


MAX_DELETIONS = 1000


def provider_deletions(*, limit: int = 100) -> dict[str, int]:
    """Attempt the due provider deletes of the outbox (``services.provider_deletions``):
    each row claimed under its own lock, so N workers delete once."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_DELETIONS:
        raise invalid("limit", f"limit must be 1-{MAX_DELETIONS}")
    return outbox.sweep(limit=limit)
