"""Celery tasks of Reward Memory (``loopx_site.celery``): thin adapters of
``reward_memory.background``, each run journalled as a ``core.BackgroundRun``. Their
names are stable (schedules and the cluster leg refer to them)."""

from celery import shared_task

from loopx_site.core.background import record_run
from reward_memory import background

RECONCILE = "loopx.reward_memory.reconcile_ingests"
EXPIRE = "loopx.reward_memory.expire_records"
DELETE = "loopx.reward_memory.provider_deletions"


@shared_task(name=RECONCILE, bind=True, soft_time_limit=240, time_limit=300)
def reconcile_ingests(self, limit_agents: int = 50) -> dict:
    return record_run(
        RECONCILE,
        lambda: background.reconcile_ingests(limit_agents=limit_agents),
        task_id=self.request.id,
    )


@shared_task(name=EXPIRE, bind=True, soft_time_limit=240, time_limit=300)
def expire_records(self, corpus_id: str | None = None) -> dict:
    return record_run(
        EXPIRE, lambda: background.expire_records(corpus_id=corpus_id), task_id=self.request.id
    )


@shared_task(name=DELETE, bind=True, soft_time_limit=240, time_limit=300)
def provider_deletions(self, limit: int = 100) -> dict:
    return record_run(
        DELETE, lambda: background.provider_deletions(limit=limit), task_id=self.request.id
    )
