"""The cluster leg's metrics scenario: ``/metrics`` of both app instances (each its own
``PROMETHEUS_MULTIPROC_DIR``, like two hosts) and the Celery workers' own endpoints are
scraped before and after traffic; the request counters of each instance and the
background-run counters of the workers must have moved."""

from __future__ import annotations

import http.client
import re
import time

from tests.cluster.client import Client

METRICS_TOKEN = "cluster-leg-metrics-token"
REQUESTS = "loopx_http_requests_total"
RUNS = "loopx_background_runs_total"


def scrape(port: int, token: str | None = METRICS_TOKEN) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Host": "127.0.0.1"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        conn.request("GET", "/metrics", headers=headers)
        response = conn.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    except (OSError, http.client.HTTPException):
        return 0, ""
    finally:
        conn.close()


def total(text: str, name: str) -> float:
    pattern = re.compile(rf"^{name}(?:\{{[^}}]*\}})? (\S+)$", re.MULTILINE)
    return sum(float(v) for v in pattern.findall(text))


def _workers(topo) -> list[str]:
    return [n for n in ("worker1", "worker2") if f"{n}_metrics" in topo.ports]


def _worker_runs(topo) -> float:
    """Background runs counted by the workers' own endpoints (no token: loopback-bound)."""
    return sum(total(scrape(topo.ports[f"{w}_metrics"], None)[1], RUNS) for w in _workers(topo))


def metrics_scraped(topo, tokens, ids, requests: int = 10, seconds: float = 45):
    apps = ("app1", "app2")
    before = {n: total(scrape(topo.ports[n])[1], REQUESTS) for n in apps}
    runs_before = _worker_runs(topo)
    refused, _ = scrape(topo.ports["app1"], token="not-the-token")
    for name in apps:
        client = Client(topo.ports[name], tokens["cluster"], name)
        for _ in range(requests):
            client.get("/api/v1/goals/")
        client.close()
    after = {n: total(scrape(topo.ports[n])[1], REQUESTS) for n in apps}
    moved = {n: after[n] - before[n] for n in apps}
    runs_moved = 0.0
    deadline = time.monotonic() + seconds
    while _workers(topo) and time.monotonic() < deadline:  # beat schedules every 2 s
        runs_moved = _worker_runs(topo) - runs_before
        if runs_moved > 0:
            break
        time.sleep(1)
    ok = refused == 403 and all(m >= requests for m in moved.values())
    ok = ok and (runs_moved > 0 or not topo.celery)
    return ok, {
        "refused_without_token": refused,
        "requests_counted": moved,
        "worker_runs_counted": runs_moved,
    }
