"""Celery tasks of the hooks app (``loopx_site.celery``): thin adapters of
``hooks.background``, each run journalled as a ``core.BackgroundRun``. Their names are
stable (schedules and the cluster leg refer to them)."""

from celery import shared_task

from hooks import background
from loopx_site.core.background import record_run

RECOVER = "loopx.hooks.recover_dispatches"
EXECUTE = "loopx.hooks.execute_admitted_intents"


@shared_task(name=RECOVER, bind=True, soft_time_limit=240, time_limit=300)
def recover_dispatches(self, limit: int = 100, grace_seconds: int | None = None) -> dict:
    return record_run(
        RECOVER,
        lambda: background.recover_dispatches(limit=limit, grace_seconds=grace_seconds),
        task_id=self.request.id,
    )


@shared_task(name=EXECUTE, bind=True, soft_time_limit=120, time_limit=180)
def execute_admitted_intents(
    self, executor: str = "fake-scheduler", limit: int | None = None
) -> dict:
    return record_run(
        EXECUTE,
        lambda: background.execute_admitted_intents(executor=executor, limit=limit),
        task_id=self.request.id,
    )
