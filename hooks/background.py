"""The hooks app's background sweeps (run by ``hooks.tasks``; services, not adapters).

Each sweep takes its rows one at a time with ``loopx_site.core.background.claim`` (row
lock, ``SKIP LOCKED`` on PostgreSQL), re-checks under the lock that the row is still due,
and calls the service the matching command calls — so N workers on N machines do each
row once and the others skip it:

* ``recover_dispatches`` — ``hooks replay --execute`` for one receipt at a time: committed
  receipts with no hook checkpoint (a crash after the primary commit) and receipts with a
  failed dispatch that still has attempts left. A receipt is due only
  ``LOOPX_RECOVERY_GRACE_SECONDS`` after its commit, so a settle still running its own
  hook phase is left to finish it. The journal's unique ``dispatch_id`` / ``intent_id``
  constraints still decide should two phases meet: same identities, one row.
* ``execute_admitted_intents`` — ``hooks execute-intents --execute`` for one *admitted*
  intent at a time (pending intents wait for an operator's admission).
"""

import datetime as dt
from collections import Counter

from django.conf import settings
from django.db import transaction

from hooks import executors, selectors, services
from hooks.errors import error
from hooks.models import DurableWritebackReceipt, HookIntent
from loopx_site.core import clock
from loopx_site.core.background import claim

MAX_SWEEP = 500
#: Journal outcome of one dispatch → the count it adds to.
OUTCOME_COUNTS = {
    "recorded": "dispatches_recorded",
    "retried": "dispatches_retried",
    "replayed": "dispatches_unchanged",
    "conflict": "dispatches_conflicting",
    "failed_again": "dispatches_failed_again",
}


#: What executing one claimed intent can end as (``hooks.services.execute_intents``).
EXECUTION_ACTIONS = ("executed", "rejected", "deduplicated")


def _bounded(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SWEEP:
        raise error("invalid_argument", f"limit must be 1-{MAX_SWEEP}", field="limit")
    return limit


def _due_receipts(cutoff: dt.datetime):
    missing = selectors.receipts_missing_hook_checkpoint().filter(committed_at__lte=cutoff)
    failing = selectors.receipts_with_retryable_failures().filter(committed_at__lte=cutoff)
    return missing, failing


def recover_dispatches(*, limit: int = 100, grace_seconds: int | None = None) -> dict[str, int]:
    """Replay the hook phase of due receipts, one claimed receipt at a time."""
    limit = _bounded(limit)
    if grace_seconds is None:
        grace_seconds = settings.LOOPX_RECOVERY_GRACE_SECONDS
    missing, failing = _due_receipts(clock.now() - dt.timedelta(seconds=grace_seconds))
    pks = list(missing.values_list("pk", flat=True)[:limit])
    if len(pks) < limit:
        seen = set(pks)
        more = [pk for pk in failing.values_list("pk", flat=True)[:limit] if pk not in seen]
        pks += more[: limit - len(pks)]
    counts = Counter(candidates=len(pks), claimed=0, skipped=0, deferred=0)
    counts.update(dict.fromkeys(OUTCOME_COUNTS.values(), 0))
    for pk in pks:
        with transaction.atomic():
            receipt = claim(DurableWritebackReceipt.objects.filter(pk=pk)).first()
            due = receipt is not None and (
                missing.filter(pk=pk).exists() or failing.filter(pk=pk).exists()
            )
            if not due:  # another worker holds it, or finished it since we looked
                counts["skipped"] += 1
                continue
            replayed = services.replay(receipt_id=receipt.receipt_id, execute=True)
        counts["claimed"] += 1
        for item in replayed.items:
            if item.phase.status == "deferred":
                counts["deferred"] += 1
            for outcome in item.phase.outcomes:
                counts[OUTCOME_COUNTS.get(outcome.outcome, "dispatches_other")] += 1
    return dict(counts)


def execute_admitted_intents(
    *, executor: str = "fake-scheduler", limit: int | None = None
) -> dict[str, int]:
    """Execute admitted intents through ``executor``, one claimed intent at a time (its
    per-run budget bounds a sweep)."""
    spec = executors.get(executor) if isinstance(executor, str) else None
    if spec is None:  # the service's own refusal (unknown_executor), before any row
        services.execute_intents(executor=executor)
    budget = spec.max_intents_per_run if limit is None else min(_bounded(limit), MAX_SWEEP)
    admitted = HookIntent.objects.filter(status=HookIntent.Status.ADMITTED)
    due = list(admitted.order_by("created_at", "pk").values_list("pk", "intent_id")[:budget])
    counts = Counter(candidates=len(due), claimed=0, skipped=0)
    counts.update(dict.fromkeys(EXECUTION_ACTIONS, 0))
    for pk, intent_id in due:
        with transaction.atomic():
            if claim(admitted.filter(pk=pk)).first() is None:
                counts["skipped"] += 1
                continue
            run = services.execute_intents(executor=executor, intent_ids=[intent_id], execute=True)
        counts["claimed"] += 1
        for decision in run.decisions:
            counts[decision.action] += 1
    return dict(counts)
