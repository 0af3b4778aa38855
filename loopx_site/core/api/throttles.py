"""Per-credential rate limits for every API operation that runs a provider, writes
memory or settles a turn — counted once across all server processes.

A view opts in with one line, ``throttle_scope = "<scope>"``; its writes (every method
but GET/HEAD/OPTIONS) are then limited. The rate of each scope is
``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"][scope]`` (from ``LOOPX_THROTTLE_<SCOPE>`` in
settings; ``off`` lifts it). The budget belongs to the authenticated credential — one
host token, or one operator account — never to an IP address.

Counting is a fixed window per (scope, credential), opened by its first call: the
first ``N`` calls of a window are admitted, every later one is refused until the
window ends. Each call is counted by one atomic operation of the shared store, so the
total admitted is exact however many processes serve the API:

* ``database`` (the default, ``LOOPX_THROTTLE_STORE=database``): one row per bucket in
  ``core_throttlecounter``, counted by ``INSERT … ON CONFLICT DO UPDATE … RETURNING``
  (SQLite ≥ 3.35 serialises writers; PostgreSQL locks the row) in autocommit;
* ``cache`` (``LOOPX_THROTTLE_STORE=cache``): the default cache, counted by
  ``cache.add`` + ``cache.incr`` — atomic on Redis (``CACHE_URL=redis://…``) and
  Memcached, the production setting for several hosts. A cache whose ``incr`` is a
  read-then-write (database or file cache) is refused as a configuration error.

DRF's ``SimpleRateThrottle`` keeps a history list with get-then-set and over-admits
across processes; it is not used.

A refused call is the ``throttled`` envelope (429) with ``Retry-After``.
"""

import math
import re
import time

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from rest_framework.permissions import SAFE_METHODS
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle

from loopx_site.core import access, metrics

#: The scopes views may name; settings give each a rate (see ``settings.THROTTLE_SCOPES``).
SCOPES = (
    "recall",
    "doctor",
    "ingest",
    "turn_recall",
    "reward_recall",
    "review",
    "settle",
    "write",
)

_RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d*)\s*(s|sec|second|m|min|minute|h|hour|d|day)s?\s*$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
#: Cache backends whose ``incr`` is atomic across processes (or, locmem, within one).
ATOMIC_CACHES = (
    "django.core.cache.backends.redis.RedisCache",
    "django.core.cache.backends.memcached.PyMemcacheCache",
    "django.core.cache.backends.memcached.PyLibMCCache",
    "django.core.cache.backends.locmem.LocMemCache",
)


def parse_rate(rate: str) -> tuple[int, float]:
    """``"60/min"`` → ``(60, 60.0)``; ``"5/15m"`` → ``(5, 900.0)``."""
    match = _RATE.fullmatch(rate or "")
    if not match:
        raise ImproperlyConfigured(f"Invalid throttle rate {rate!r} (expected N/sec|min|hour|day).")
    count, multiple, unit = match.groups()
    return int(count), float(int(multiple or 1) * _SECONDS[unit[0]])


def credential_ident(request) -> str | None:
    """A stable key of the authenticated credential, or ``None`` when there is none."""
    user = request.user
    if isinstance(user, access.Caller):
        return f"token:{user.token_id}"
    if user is not None and getattr(user, "is_authenticated", False):
        return f"user:{user.pk}"
    return None


class DatabaseStore:
    """Counters in ``core_throttlecounter``, one atomic upsert per call."""

    def _sql(self) -> str:
        from loopx_site.core.models import ThrottleCounter

        q = connection.ops.quote_name
        t = q(ThrottleCounter._meta.db_table)
        bucket, end, hits = q("bucket"), q("window_end"), q("hits")
        # Quoted identifiers of our own table; every value is a parameter.
        return (
            f"INSERT INTO {t} ({bucket}, {end}, {hits}) VALUES (%s, %s, 1) "  # noqa: S608
            f"ON CONFLICT ({bucket}) DO UPDATE SET "
            f"{hits} = CASE WHEN {t}.{end} <= %s THEN 1 ELSE {t}.{hits} + 1 END, "
            f"{end} = CASE WHEN {t}.{end} <= %s THEN %s ELSE {t}.{end} END "
            f"RETURNING {hits}, {end}"
        )

    def hit(self, bucket: str, duration: float, now: float) -> tuple[int, float]:
        with connection.cursor() as cursor:
            cursor.execute(self._sql(), [bucket, now + duration, now, now, now + duration])
            hits, end = cursor.fetchone()
        return int(hits), float(end)

    def reset(self) -> None:
        from loopx_site.core.models import ThrottleCounter

        ThrottleCounter.objects.all().delete()


class CacheStore:
    """Counters in the default cache: ``add`` opens a window, ``incr`` counts a call."""

    prefix = "loopx_throttle:"

    def hit(self, bucket: str, duration: float, now: float) -> tuple[int, float]:
        key, timeout = self.prefix + bucket, max(1, math.ceil(duration))
        for _ in range(3):
            opened = cache.add(key, 0, timeout=timeout)
            if opened:
                cache.set(key + ":end", now + duration, timeout=timeout)
            try:
                hits = cache.incr(key)
            except ValueError:  # the window expired between add and incr: open another
                continue
            if hits == 1 and not opened:
                # Redis's INCR re-created a key that expired after Django's existence
                # check: give the new window its expiry, or it would never end.
                cache.touch(key, timeout=timeout)
            return int(hits), float(cache.get(key + ":end") or now + duration)
        return 1, now + duration

    def reset(self) -> None:
        cache.clear()


def store() -> DatabaseStore | CacheStore:
    """The configured counter store (``LOOPX_THROTTLE_STORE``)."""
    kind = getattr(settings, "LOOPX_THROTTLE_STORE", "database")
    if kind == "database":
        return DatabaseStore()
    if kind == "cache":
        backend = settings.CACHES["default"]["BACKEND"]
        if backend not in ATOMIC_CACHES:
            raise ImproperlyConfigured(
                "LOOPX_THROTTLE_STORE=cache needs a cache with an atomic incr (Redis or "
                f"Memcached); {backend} counts with a read-then-write."
            )
        return CacheStore()
    raise ImproperlyConfigured("LOOPX_THROTTLE_STORE must be database or cache.")


def rate_of(scope: str) -> str | None:
    # Read the live setting (tests and operators may change it without a restart of
    # the class): DRF's own class attribute is frozen at import time.
    rates = api_settings.DEFAULT_THROTTLE_RATES
    if scope not in rates:
        raise ImproperlyConfigured(f"No throttle rate is set for the scope {scope!r}.")
    return rates[scope]  # None: that scope is not limited


class CredentialScopedRateThrottle(BaseThrottle):
    """The view's ``throttle_scope``, per credential, counted exactly in the shared store."""

    def __init__(self):
        self._wait: float | None = None

    def allow_request(self, request, view) -> bool:
        scope = getattr(view, "throttle_scope", None)
        if not scope or request.method in SAFE_METHODS:
            return True
        rate = rate_of(scope)
        ident = credential_ident(request)
        if rate is None or ident is None:  # unauthenticated calls never reach a view
            return True
        limit, duration = parse_rate(rate)
        now = time.time()
        hits, window_end = store().hit(f"{scope}:{ident}", duration, now)
        if hits <= limit:
            return True
        self._wait = max(1.0, window_end - now)
        metrics.throttled(scope=scope)
        return False

    def wait(self) -> float | None:
        return self._wait
