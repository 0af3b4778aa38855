"""The hooks app's retention pruners (``contributions.RETENTION``; see
``loopx_site.core.retention``). What stays, whatever its age:

* every ``DurableWritebackReceipt`` and ``HookPhaseCheckpoint`` — a settle replayed by its
  effect id answers from them, and the checkpoint tells recovery the phase ran;
* a ``pending`` or ``admitted`` intent (an executor still has to decide or act) and the
  dispatch it belongs to;
* a ``failed`` dispatch with attempts left (``hooks replay`` / recovery retries it).

``outbox``: ``rejected``/``executed`` intents older than the cutoff (their executions go
with them). ``dispatches``: ``accepted``/``not_applicable`` dispatches, and ``failed``
ones with no attempts left, older than the cutoff and holding no open intent.
"""

import datetime as dt

from django.db.models import F, Q

from hooks.models import HookDispatch, HookIntent

OPEN_INTENTS = ("pending", "admitted")


def prune_outbox(*, policy: str, older_than: dt.datetime, execute: bool) -> dict[str, int]:
    due = HookIntent.objects.filter(created_at__lt=older_than, status__in=("rejected", "executed"))
    count = due.count()
    if execute and count:
        due.delete()
    return {"hooks.HookIntent": count}


def prune_dispatches(*, policy: str, older_than: dt.datetime, execute: bool) -> dict[str, int]:
    finished = Q(status__in=("accepted", "not_applicable")) | Q(
        status="failed", attempts__gte=F("max_attempts")
    )
    open_dispatches = HookIntent.objects.filter(status__in=OPEN_INTENTS).values("dispatch_id")
    due = HookDispatch.objects.filter(finished, created_at__lt=older_than).exclude(
        pk__in=open_dispatches
    )
    count = due.count()
    if execute and count:
        due.delete()
    return {"hooks.HookDispatch": count}
