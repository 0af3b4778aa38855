"""Background runs: the journal of what each background task did, the row claim every
sweep uses, and the operator's switch of the periodic schedules.

A background task (``<app>/tasks.py``) is a thin adapter: it hands its app's sweep (a
service in ``<app>/background.py``) to ``record_run``, which writes one
``BackgroundRun`` row — task, worker, start and end, outcome, the sweep's counts, an
error *code* — and nothing private. A sweep takes its rows one at a time with
``claim``: on PostgreSQL ``SELECT … FOR UPDATE SKIP LOCKED``, so with N workers on N
machines each row is done by one of them and the others skip it; on SQLite the same
query, serialised by SQLite's write lock (one writer at a time).
"""

import logging
import os
import socket
from collections.abc import Callable

from django.db import DatabaseError, connections, router
from django.db.models import QuerySet

from loopx_site.core import access, clock, metrics
from loopx_site.core.errors import DomainError
from loopx_site.core.models import BackgroundRun

logger = logging.getLogger("loopx.background")

#: The permission an operator account needs to switch a periodic schedule on or off.
SCHEDULE_PERMISSION = "django_celery_beat.change_periodictask"


def worker_name() -> str:
    """``host:pid`` of this process."""
    return f"{socket.gethostname()}:{os.getpid()}"[:255]


def claim(queryset: QuerySet) -> QuerySet:
    """``queryset`` locked for the current transaction, rows held by another transaction
    skipped (PostgreSQL ``SKIP LOCKED``; SQLite: its write lock serialises instead).
    Call inside ``transaction.atomic()``; filter the queryset by what makes a row due, so
    a row finished by another worker (committed) no longer matches."""
    features = connections[router.db_for_write(queryset.model)].features
    options = {}
    if features.has_select_for_update_skip_locked:
        options["skip_locked"] = True
    if features.has_select_for_update_of:
        options["of"] = ("self",)
    return queryset.select_for_update(**options)


def _finish(run: BackgroundRun, outcome: str, counts: dict, code: str = "") -> None:
    metrics.background_run_observed(task=run.task, outcome=outcome, code=code)
    try:
        BackgroundRun.objects.filter(pk=run.pk).update(
            outcome=outcome, counts=counts, error_code=code, finished_at=clock.now()
        )
    except DatabaseError:  # the database went away: the run stays "running"
        logger.warning("background run %s not finished: database_unavailable", run.pk)


def record_run(task: str, sweep: Callable[[], dict[str, int]], *, task_id: str = "") -> dict:
    """Run ``sweep`` and journal it; returns its counts (with the run's ``run_id``).

    A ``DomainError`` (a bad schedule argument …) is recorded with its code and returned
    as ``{"error_code": …}``: a run that cannot succeed is not retried. Anything else is
    recorded (``internal_error``, ``database_unavailable``, ``time_limit_exceeded``) and
    raised again for the worker to log."""
    run = BackgroundRun.objects.create(
        task=task, task_id=task_id or "", worker=worker_name(), started_at=clock.now()
    )
    try:
        counts = {k: int(v) for k, v in sweep().items()}
    except DomainError as exc:
        _finish(run, BackgroundRun.Outcome.FAILED, {}, exc.code)
        logger.warning("background task %s failed: %s", task, exc.code)
        return {"run_id": run.pk, "error_code": exc.code}
    except DatabaseError:
        _finish(run, BackgroundRun.Outcome.FAILED, {}, "database_unavailable")
        raise
    except Exception as exc:
        code = (
            "time_limit_exceeded"
            if type(exc).__name__ == "SoftTimeLimitExceeded"
            else "internal_error"
        )
        _finish(run, BackgroundRun.Outcome.FAILED, {}, code)
        raise
    _finish(run, BackgroundRun.Outcome.OK, counts)
    logger.info("background task %s ok %s", task, counts)
    return {"run_id": run.pk, **counts}


def set_schedules_enabled(schedules, *, enabled: bool, operator: access.Caller) -> int:
    """Switch periodic schedules (``django_celery_beat`` ``PeriodicTask`` rows) on or off:
    the shell, or an account holding ``django_celery_beat.change_periodictask``. Saved one
    by one, so beat's change tracker sees it. Returns how many changed."""
    access.require_operator_permission(operator, SCHEDULE_PERMISSION)
    changed = 0
    for schedule in schedules:
        if schedule.enabled != enabled:
            schedule.enabled = enabled
            schedule.save()
            changed += 1
    return changed
