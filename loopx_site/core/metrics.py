"""Prometheus metrics: what the service is doing, for the operator's dashboards and alerts
(``docs/operations.md``, ``docs/grafana-dashboard.json``).

Built on ``prometheus-client`` (the reference client; ``django-prometheus`` would add its
own middleware, model and cache metrics we do not want and still leave the domain
metrics to us). Two kinds of series:

* **events**, counted where they happen, in any process (web, Celery worker): requests
  per route, recalls per corpus, provider failures by kind, throttled calls, hook
  dispatches and their lag, background-run outcomes. Counters and histograms only, so
  they are safe in ``PROMETHEUS_MULTIPROC_DIR`` mode: each process writes its own files
  and a scrape sums them (a process that exits keeps its counts);
* **state**, read from the database at scrape time by the apps' ``METRICS_GAUGES``
  contributions (``loopx_site.core.contributions``): the review to-do, pending ingests,
  outbox backlog and age. They are computed once per scrape by the scraped process, so
  they are never summed over processes.

Labels carry codes, route patterns and registered identifiers only — never request
content, query text, paths or digests of private text.

``prometheus_client`` is imported on the first recorded event, never at start-up: a
host's short CLI call that records nothing pays nothing.

Access (``/metrics``): a scrape passes when it presents ``Authorization: Bearer
<LOOPX_METRICS_TOKEN>`` or comes from an address inside ``LOOPX_METRICS_NETWORKS``;
otherwise 403 (404 when neither is configured: the endpoint is off).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import time
from functools import cache
from typing import Any

from django.conf import settings
from django.http import HttpResponse

from loopx_site.core import contributions

logger = logging.getLogger("loopx.metrics")

#: Latency buckets (seconds) of requests and recalls: 5 ms … 30 s.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
#: Lag buckets (seconds) of hook dispatches after their writeback receipt.
LAG_BUCKETS = (0.05, 0.25, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0)


@cache
def _series() -> dict[str, Any]:
    """The event series, created once per process on first use."""
    from prometheus_client import Counter, Histogram

    return {
        "requests": Counter(
            "loopx_http_requests",
            "HTTP requests answered, by route pattern, method and status code.",
            ["route", "method", "status"],
        ),
        "request_seconds": Histogram(
            "loopx_http_request_duration_seconds",
            "Time to answer an HTTP request, by route pattern and method.",
            ["route", "method"],
            buckets=BUCKETS,
        ),
        "recalls": Counter(
            "loopx_recalls",
            "Executed recalls by area, corpus and status (ok, empty, provider_unavailable, "
            "guard_blocked).",
            ["area", "corpus", "status"],
        ),
        "recall_seconds": Histogram(
            "loopx_recall_duration_seconds",
            "Time of an executed recall inside the service, by area and corpus.",
            ["area", "corpus"],
            buckets=BUCKETS,
        ),
        "provider_failures": Counter(
            "loopx_provider_failures",
            "Provider calls that failed, by area (reward_memory, preferences) and bounded "
            "failure kind.",
            ["area", "kind"],
        ),
        "throttled": Counter(
            "loopx_throttled_calls", "API calls refused by a rate limit, by scope.", ["scope"]
        ),
        "dispatches": Counter(
            "loopx_hook_dispatches",
            "Hook dispatches journalled, by status and failure code.",
            ["status", "failure_code"],
        ),
        "dispatch_lag": Histogram(
            "loopx_hook_dispatch_lag_seconds",
            "Seconds from a durable writeback receipt to the journalling of a hook dispatch.",
            buckets=LAG_BUCKETS,
        ),
        "background_runs": Counter(
            "loopx_background_runs",
            "Background task runs by task, outcome and error code.",
            ["task", "outcome", "code"],
        ),
    }


def _record(action) -> None:
    """Run one recording; a metrics fault never fails the operation it observes."""
    try:
        action(_series())
    except Exception:  # observability must not break the service
        logger.warning("metric not recorded", exc_info=False)


def request_observed(*, route: str, method: str, status: int, seconds: float) -> None:
    def act(s):
        s["requests"].labels(route, method, str(status)).inc()
        s["request_seconds"].labels(route, method).observe(seconds)

    _record(act)


def recall_observed(*, area: str, corpus: str, status: str, seconds: float) -> None:
    def act(s):
        s["recalls"].labels(area, corpus, status).inc()
        s["recall_seconds"].labels(area, corpus).observe(seconds)

    _record(act)


def provider_failed(*, kind: str, area: str = "reward_memory") -> None:
    _record(lambda s: s["provider_failures"].labels(area, kind).inc())


def throttled(*, scope: str) -> None:
    _record(lambda s: s["throttled"].labels(scope).inc())


def dispatch_observed(*, status: str, failure_code: str | None, lag_seconds: float) -> None:
    def act(s):
        s["dispatches"].labels(status, failure_code or "").inc()
        s["dispatch_lag"].observe(max(0.0, lag_seconds))

    _record(act)


def background_run_observed(*, task: str, outcome: str, code: str = "") -> None:
    _record(lambda s: s["background_runs"].labels(task, outcome, code).inc())


# -- state read at scrape time ------------------------------------------------------------
class _StateCollector:
    """The apps' ``METRICS_GAUGES``: ``gauge() -> [(name, help, {labels: value})]``."""

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        for key, gauge in contributions.METRICS_GAUGES:
            try:
                families = gauge()
            except Exception:  # one failing gauge must not hide the others
                logger.warning("metrics gauge %s failed", key)
                continue
            for name, help_text, samples in families:
                label_names = sorted({k for labels in samples for k, _ in labels})
                family = GaugeMetricFamily(name, help_text, labels=label_names)
                for labels, value in samples.items():
                    values = dict(labels)
                    family.add_metric([values.get(k, "") for k in label_names], value)
                yield family


def _event_registry():
    """This process's registry, or — in multi-process mode — one that sums the files of
    every process that shares ``PROMETHEUS_MULTIPROC_DIR``."""
    from prometheus_client import REGISTRY, CollectorRegistry

    _series()  # every event family is present (zero) even before its first event
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY
    from prometheus_client import multiprocess

    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    return registry


def exposition_events() -> bytes:
    from prometheus_client import generate_latest

    return generate_latest(_event_registry())


def exposition() -> tuple[bytes, str]:
    """The text exposition of this deployment: event series (summed over processes in
    multi-process mode) followed by the database state."""
    from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

    state = CollectorRegistry()
    state.register(_StateCollector())
    return exposition_events() + generate_latest(state), CONTENT_TYPE_LATEST


# -- access -------------------------------------------------------------------------------
@cache
def _networks(spec: str) -> tuple:
    return tuple(ipaddress.ip_network(n.strip(), strict=False) for n in spec.split(",") if n)


def scrape_allowed(request) -> bool | None:
    """``True``/``False``; ``None`` when no token and no network is configured (off)."""
    token = getattr(settings, "LOOPX_METRICS_TOKEN", "") or ""
    networks = _networks(getattr(settings, "LOOPX_METRICS_NETWORKS", "") or "")
    if not token and not networks:
        return None
    presented = request.META.get("HTTP_AUTHORIZATION", "")
    if token and hmac.compare_digest(presented.encode(), f"Bearer {token}".encode()):
        return True
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(address in network for network in networks)


def metrics_view(request):
    """``GET /metrics``: the Prometheus text exposition, for an allowed scraper only."""
    allowed = scrape_allowed(request)
    if allowed is None:
        return HttpResponse("Not found\n", status=404, content_type="text/plain")
    if not allowed:
        return HttpResponse("Forbidden\n", status=403, content_type="text/plain")
    body, content_type = exposition()
    return HttpResponse(body, content_type=content_type)


class MetricsMiddleware:
    """Counts every answered request by its route pattern (never its path)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        route = (match.route or match.view_name) if match else "unmatched"
        request_observed(
            route=route or "unmatched",
            method=request.method if request.method in _METHODS else "other",
            status=response.status_code,
            seconds=time.perf_counter() - started,
        )
        return response


_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def serve_worker_metrics() -> int | None:
    """In a Celery worker: serve ``/metrics`` of the multi-process directory on
    ``LOOPX_METRICS_WORKER_PORT`` (bound to ``LOOPX_METRICS_WORKER_ADDR``, loopback by
    default: a network rule, the worker has no token check). Returns the port or ``None``."""
    port = int(os.environ.get("LOOPX_METRICS_WORKER_PORT") or 0)
    if not port:
        return None
    from prometheus_client import start_http_server

    addr = os.environ.get("LOOPX_METRICS_WORKER_ADDR") or "127.0.0.1"
    start_http_server(port, addr=addr, registry=_event_registry())
    return port
