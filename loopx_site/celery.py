"""The Celery app of the background tasks (``docs/background-work.md``).

Workers and beat load it explicitly::

    celery -A loopx_site.celery worker --queues loopx --concurrency 2
    celery -A loopx_site.celery beat   # DatabaseScheduler: the schedules in the admin

Its configuration is the ``CELERY_*`` block of ``loopx_site.settings`` (broker
``LOOPX_CELERY_BROKER_URL``); the task modules are each app's ``tasks.py``, found through
``INSTALLED_APPS``. CLI processes never import this module, so a host's CLI call pays
nothing for it; the web process loads it with the URLconf (``loopx_site.urls``: the task
names the admin's schedule form offers).
"""

import os

from celery import Celery
from celery.signals import worker_process_init, worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "loopx_site.settings")

app = Celery("loopx_site")
app.set_default()  # also the app of threads that never imported this module (shared_task)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_process_init.connect
def _freeze_heap(**kwargs):
    """Each worker process, once loaded: its start-up heap out of later collections."""
    from django.apps import apps

    if apps.ready:
        from loopx_site.engines import heap

        heap.freeze()


@worker_process_init.connect
def _trace_worker_process(**kwargs):
    """Each prefork pool process: its own tracer provider, exporter and Celery
    instrumentation when the ``OTEL_*`` variables ask for traces (an export thread
    started before the fork does not run in the child)."""
    from loopx_site.core import tracing

    tracing.configure_in_worker_process()


@worker_ready.connect
def _serve_metrics(**kwargs):
    """The worker's own counters (its pool processes' too, through
    ``PROMETHEUS_MULTIPROC_DIR``) on ``LOOPX_METRICS_WORKER_PORT`` when set."""
    from loopx_site.core import metrics

    metrics.serve_worker_metrics()
