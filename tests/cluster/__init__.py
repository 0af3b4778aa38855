"""The cluster leg (make test-cluster): PostgreSQL behind PgBouncer, Redis, two app
instances behind HAProxy, Celery workers + beat; not collected by the main suite except
its own unit tests (``test_*.py``)."""
