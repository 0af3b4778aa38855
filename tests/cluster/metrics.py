"""The cluster leg's metrics scenario: ``/metrics`` of both app instances (each its own
``PROMETHEUS_MULTIPROC_DIR``, like two hosts) and the Celery workers' own endpoints are
scraped before and after traffic; the request counters of each instance, each instance's
semantic preference recall series (``area="preferences"``, the demo's registered config
``demo`` recalled through the API) and the background-run counters of the workers must
have moved."""

from __future__ import annotations

import http.client
import re
import time

from tests.cluster.client import Client

METRICS_TOKEN = "cluster-leg-metrics-token"
REQUESTS = "loopx_http_requests_total"
RUNS = "loopx_background_runs_total"
RECALLS = "loopx_recalls_total"
RECALL_SECONDS = "loopx_recall_duration_seconds_count"
#: The demo's registered semantic preference config (``preferences.demo_recall``), owned
#: by Goal ``demo``: the seeded ``author`` token may run it.
PREFERENCE_RECALL = "/api/v1/semantic-preferences/recall/"
PREFERENCE_CONFIG = {"config": "demo", "surface": "issue_fix.pr_description", "execute": True}


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


def total(text: str, name: str, **labels: str) -> float:
    """The sum of the samples of ``name`` whose labels include every one of ``labels``."""
    pattern = re.compile(rf"^{name}(?:\{{([^}}]*)\}})? (\S+)$", re.MULTILINE)
    wanted = {f'{key}="{value}"' for key, value in labels.items()}
    return sum(
        float(value)
        for found, value in pattern.findall(text)
        if wanted <= set(re.findall(r'\w+="[^"]*"', found))
    )


def preference_recalls(text: str) -> dict[str, float]:
    """The preference recall series of the demo config: executed recalls (any status)
    and timed recalls."""
    labels = {"area": "preferences", "corpus": PREFERENCE_CONFIG["config"]}
    return {
        "recalls": total(text, RECALLS, **labels),
        "timed": total(text, RECALL_SECONDS, **labels),
    }


def _workers(topo) -> list[str]:
    return [n for n in ("worker1", "worker2") if f"{n}_metrics" in topo.ports]


def _worker_runs(topo) -> float:
    """Background runs counted by the workers' own endpoints (no token: loopback-bound)."""
    return sum(total(scrape(topo.ports[f"{w}_metrics"], None)[1], RUNS) for w in _workers(topo))


def _recall_preferences(port: int, token: str, name: str, recalls: int) -> list[str]:
    """Executed preference recalls on one instance; their statuses (``completed``)."""
    client = Client(port, token, name)
    answers = [client.post(PREFERENCE_RECALL, PREFERENCE_CONFIG) for _ in range(recalls)]
    client.close()
    return [str(a.body.get("status") if a.ok else a.status) for a in answers]


def metrics_scraped(topo, tokens, ids, requests: int = 10, recalls: int = 2, seconds: float = 45):
    apps = ("app1", "app2")
    scraped = {n: scrape(topo.ports[n])[1] for n in apps}
    before = {n: total(scraped[n], REQUESTS) for n in apps}
    prefs_before = {n: preference_recalls(scraped[n]) for n in apps}
    runs_before = _worker_runs(topo)
    refused, _ = scrape(topo.ports["app1"], token="not-the-token")
    statuses = {}
    for name in apps:
        client = Client(topo.ports[name], tokens["cluster"], name)
        for _ in range(requests):
            client.get("/api/v1/goals/")
        client.close()
        statuses[name] = _recall_preferences(topo.ports[name], tokens["author"], name, recalls)
    scraped = {n: scrape(topo.ports[n])[1] for n in apps}
    after = {n: total(scraped[n], REQUESTS) for n in apps}
    moved = {n: after[n] - before[n] for n in apps}
    prefs_moved = {
        n: {k: v - prefs_before[n][k] for k, v in preference_recalls(scraped[n]).items()}
        for n in apps
    }
    runs_moved = 0.0
    deadline = time.monotonic() + seconds
    while _workers(topo) and time.monotonic() < deadline:  # beat schedules every 2 s
        runs_moved = _worker_runs(topo) - runs_before
        if runs_moved > 0:
            break
        time.sleep(1)
    ok = refused == 403 and all(m >= requests for m in moved.values())
    ok = ok and all(s == ["completed"] * recalls for s in statuses.values())
    ok = ok and all(m == {"recalls": recalls, "timed": recalls} for m in prefs_moved.values())
    ok = ok and (runs_moved > 0 or not topo.celery)
    return ok, {
        "refused_without_token": refused,
        "requests_counted": moved,
        "preference_recall_statuses": statuses,
        "preference_recalls_counted": prefs_moved,
        "worker_runs_counted": runs_moved,
    }
