"""Reward Memory's scrape-time state series (``loopx_site.core.metrics``), registered in
``RewardMemoryConfig.ready()`` on ``contributions.METRICS_GAUGES``. Counts only: no
label carries content."""

from reward_memory import contracts as c
from reward_memory import selectors
from reward_memory.models import OperatorControl, PendingIngest, ReflectionCandidate, Review
from reward_memory.services import review_queue


def review_todo_counts() -> dict[str, int]:
    """What waits for a human, by kind: host and ingest candidates the reviewer has
    still to decide, reflection candidates awaiting evidence validation, operator edits
    whose replacement no reviewer decided yet, and accepted reviews the corpus owner has
    not applied."""
    edits = OperatorControl.objects.filter(action="edit").select_related("corpus")
    return {
        "candidate": selectors.candidates_awaiting_reviewer().count(),
        "reflection_validation": ReflectionCandidate.objects.filter(
            status=c.REFLECTION_AWAITING
        ).count(),
        "operator_edit": sum(
            1 for edit in edits.iterator() if review_queue.head(edit).state == review_queue.AWAITING
        ),
        "awaiting_apply": Review.objects.filter(
            effective_decision="accept", applied_at__isnull=True
        ).count(),
    }


def gauges() -> list[tuple[str, str, dict]]:
    todo = review_todo_counts()
    pending = PendingIngest.objects.filter(resolved_at__isnull=True)
    by_reason: dict[str, int] = {}
    for reason in pending.values_list("reason", flat=True):
        by_reason[reason] = by_reason.get(reason, 0) + 1
    return [
        (
            "loopx_review_todo",
            "Candidates and decisions waiting for a human, by kind.",
            {(("kind", kind),): n for kind, n in todo.items()},
        ),
        (
            "loopx_pending_ingests",
            "Ingests whose provider commit or readback is unresolved, by reason.",
            {(("reason", r),): n for r, n in by_reason.items()} or {(("reason", "-"),): 0},
        ),
    ]
