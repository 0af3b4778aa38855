"""``docs/grafana-dashboard.json`` is built on series ``/metrics`` really exposes: every
metric name a panel queries is one the exposition declares (with Prometheus' suffixes)."""

import json
import re

from django.test import Client, override_settings

from tests.helpers import ROOT

DASHBOARD = ROOT / "docs" / "grafana-dashboard.json"
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "gauge": ("",)}


def _exposed_names() -> set[str]:
    with override_settings(LOOPX_METRICS_TOKEN="t", LOOPX_METRICS_NETWORKS=""):
        text = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer t").content.decode()
    names = set()
    for name, kind in re.findall(r"^# TYPE (\S+) (\S+)$", text, re.MULTILINE):
        base = name.removesuffix("_total") if kind == "counter" else name
        names |= {base + suffix for suffix in SUFFIXES.get(kind, ("",))}
    return names


def test_every_metric_the_dashboard_queries_is_exposed(db):
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    used = {m for e in exprs for m in re.findall(r"\bloopx_[a-z_]+\b", e)}
    exposed = _exposed_names()
    assert used, "the dashboard queries no loopx series"
    assert used <= exposed, sorted(used - exposed)
    # the named series of issue 34 are all on the dashboard
    for needed in (
        "loopx_http_requests_total",
        "loopx_recall_duration_seconds_bucket",
        "loopx_recalls_total",
        "loopx_provider_failures_total",
        "loopx_outbox_oldest_pending_age_seconds",
        "loopx_hook_dispatch_lag_seconds_bucket",
        "loopx_pending_ingests",
        "loopx_review_todo",
        "loopx_throttled_calls_total",
        "loopx_background_runs_total",
    ):
        assert needed in used, needed


def test_the_dashboard_is_importable_json_with_a_datasource_variable():
    dashboard = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    assert dashboard["uid"] == "loopx-memory"
    assert dashboard["title"]
    assert dashboard["schemaVersion"] >= 36
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    for panel in dashboard["panels"]:
        assert set(panel["gridPos"]) == {"x", "y", "w", "h"}
        assert panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        assert panel["datasource"]["uid"].strip("${}") in variables
