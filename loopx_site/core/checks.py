"""System checks of the deployment (``manage.py check --deploy``)."""

from django.conf import settings
from django.core import checks

#: Cache backends that live inside one process: counters there are never shared.
PER_PROCESS_CACHES = ("django.core.cache.backends.locmem.LocMemCache",)


@checks.register(checks.Tags.security, deploy=True)
def throttle_store_is_shared(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """``LOOPX_THROTTLE_STORE=cache`` on a per-process cache counts each process's calls
    apart: N server processes would admit N times every rate. Refused at deploy time."""
    if getattr(settings, "LOOPX_THROTTLE_STORE", "database") != "cache":
        return []
    backend = settings.CACHES["default"]["BACKEND"]
    if backend not in PER_PROCESS_CACHES:
        return []
    return [
        checks.Error(
            "LOOPX_THROTTLE_STORE=cache counts in a per-process cache "
            f"({backend.rsplit('.', 1)[-1]}): every server process would admit the full "
            "rate on its own.",
            hint="Set CACHE_URL to a shared cache (redis://host:6379/0) or use "
            "LOOPX_THROTTLE_STORE=database.",
            id="loopx.E001",
        )
    ]
