"""The kernel's Celery task (``loopx_site.celery``): retention, a thin adapter of
``loopx_site.core.retention`` journalled as a ``BackgroundRun``. The name is stable."""

from celery import shared_task

from loopx_site.core import retention
from loopx_site.core.background import record_run

RETENTION = "loopx.core.retention"


@shared_task(name=RETENTION, bind=True, soft_time_limit=240, time_limit=300)
def enforce_retention(self) -> dict:
    return record_run(
        RETENTION,
        lambda: retention.counts(retention.enforce(execute=True)),
        task_id=self.request.id,
    )
