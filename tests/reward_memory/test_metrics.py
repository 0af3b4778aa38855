"""``/metrics`` (``loopx_site.core.metrics``): access rules, request series by route
pattern, recalls per corpus, provider failures by kind, throttled calls and the
scrape-time state (review to-do, pending ingests, outbox)."""

import re

import pytest
from django.test import Client, override_settings
from rest_framework.settings import api_settings

from tests.reward_memory import factories as f

TOKEN = "metrics-token-for-tests"


def _scrape(**extra) -> str:
    with override_settings(LOOPX_METRICS_TOKEN=TOKEN, LOOPX_METRICS_NETWORKS=""):
        response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}", **extra)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    return response.content.decode()


def _value(text: str, name: str, **labels) -> float:
    """The sample ``name{labels…}`` (labels matched as a subset), 0 when absent."""
    total = 0.0
    for line in text.splitlines():
        match = re.fullmatch(r"([a-z_]+)(?:\{(.*)\})? (\S+)", line)
        if not match or match.group(1) != name:
            continue
        have = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2) or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            total += float(match.group(3))
    return total


@pytest.mark.parametrize(
    ("token", "networks", "headers", "status"),
    [
        ("", "", {}, 404),  # neither configured: the endpoint is off
        (TOKEN, "", {}, 403),
        (TOKEN, "", {"HTTP_AUTHORIZATION": "Bearer wrong"}, 403),
        (TOKEN, "", {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}, 200),
        ("", "127.0.0.0/8", {}, 200),  # the test client's REMOTE_ADDR is 127.0.0.1
        ("", "10.0.0.0/8", {}, 403),
    ],
)
def test_metrics_answer_only_an_allowed_scraper(db, token, networks, headers, status):
    with override_settings(LOOPX_METRICS_TOKEN=token, LOOPX_METRICS_NETWORKS=networks):
        assert Client().get("/metrics", **headers).status_code == status


def test_requests_are_counted_by_route_pattern_never_by_path(db, host_client, corpus):
    before = _scrape()
    route = "api/v1/reward-memory/corpora/<str:corpus_id>/health/"
    client = host_client("demo", "author")
    assert client.get("/api/v1/reward-memory/corpora/prefs/health/").status_code == 200
    assert client.get("/api/v1/reward-memory/corpora/secret-name-x/health/").status_code == 404
    after = _scrape()
    for status in ("200", "404"):
        moved = _value(after, "loopx_http_requests_total", route=route, status=status)
        assert moved - _value(before, "loopx_http_requests_total", route=route, status=status) == 1
    assert "secret-name-x" not in after
    assert _value(after, "loopx_http_request_duration_seconds_count", route=route) >= 2


def test_recalls_are_counted_per_corpus_and_status_with_their_latency(
    db, host_client, corpus, double
):
    f.register("other", provider_id="double", agents=[("demo", "author")])
    client = host_client("demo", "author")
    before = _scrape()
    for _ in range(2):
        body = {**f.recall_request(corpus, queries=["nothing stored yet"]), "execute": True}
        assert (
            client.post("/api/v1/reward-memory/recall/", body, format="json").json()["status"]
            == "empty"
        )
    after = _scrape()
    moved = _value(after, "loopx_recalls_total", corpus="prefs", status="empty")
    assert moved - _value(before, "loopx_recalls_total", corpus="prefs", status="empty") == 2
    count = _value(after, "loopx_recall_duration_seconds_count", corpus="prefs")
    assert count - _value(before, "loopx_recall_duration_seconds_count", corpus="prefs") == 2
    assert "nothing stored yet" not in after


def test_a_provider_failure_is_counted_by_kind(db, double_corpus, double):

    before = _value(_scrape(), "loopx_provider_failures_total", kind="unavailable")
    double.available = False
    result = f.recalled(request=f.recall_request(double_corpus), execute=True)
    assert result["status"] == "provider_unavailable"
    after = _scrape()
    assert _value(after, "loopx_provider_failures_total", kind="unavailable") == before + 1
    assert _value(after, "loopx_recalls_total", status="provider_unavailable") >= 1


def test_a_throttled_call_is_counted_by_scope(db, host_client, corpus, monkeypatch):
    rates = {**api_settings.DEFAULT_THROTTLE_RATES, "reward_recall": "1/min"}
    monkeypatch.setattr(api_settings, "DEFAULT_THROTTLE_RATES", rates)
    before = _value(_scrape(), "loopx_throttled_calls_total", scope="reward_recall")
    client = host_client("demo", "author")
    body = f.recall_request(corpus)
    statuses = [
        client.post("/api/v1/reward-memory/recall/", body, format="json").status_code
        for _ in range(2)
    ]
    assert statuses == [200, 429]
    assert _value(_scrape(), "loopx_throttled_calls_total", scope="reward_recall") == before + 1


def test_state_series_are_read_at_scrape_time(db, corpus):
    text = _scrape()
    for kind in ("reflection_validation", "operator_edit", "awaiting_apply"):
        assert f'loopx_review_todo{{kind="{kind}"}} 0.0' in text
    assert "loopx_pending_ingests" in text
    assert "loopx_outbox_pending 0.0" in text
    assert "loopx_outbox_oldest_pending_age_seconds 0.0" in text


def test_a_failed_hook_dispatch_is_counted_with_its_lag(db, agent):
    from hooks.models import HookDispatch
    from loopx_site.core.models import Goal
    from tests.hooks.factories import TodoFactory, settle
    from tests.hooks.providers import P

    dispatches, lag = "loopx_hook_dispatches_total", "loopx_hook_dispatch_lag_seconds_count"
    before = _scrape()
    with override_settings(LOOPX_POST_WRITEBACK_HOOKS=[P + "Raiser"]):
        TodoFactory(goal=Goal.objects.get(goal_id="demo"), todo_id="metrics-t", segment_ref="")
        settle(todo_id="metrics-t", turn="metrics-turn")
    failed = HookDispatch.objects.get(hook_id="delta.raiser")
    after = _scrape()
    labels = {"status": "failed", "failure_code": failed.failure_code}
    assert _value(after, dispatches, **labels) == _value(before, dispatches, **labels) + 1
    assert _value(after, lag) >= _value(before, lag) + 1


def test_background_runs_are_counted_by_task_and_outcome(db):
    from loopx_site.core import background
    from loopx_site.core.errors import DomainError

    def refused():
        raise DomainError("invalid_argument", "a bad schedule argument", field="limit")

    runs = "loopx_background_runs_total"
    ok = {"task": "tests.metrics_sweep", "outcome": "ok"}
    failed = {"task": "tests.metrics_sweep", "outcome": "failed", "code": "invalid_argument"}
    before = _scrape()
    background.record_run("tests.metrics_sweep", lambda: {"done": 1})
    background.record_run("tests.metrics_sweep", refused)
    after = _scrape()
    assert _value(after, runs, **ok) == _value(before, runs, **ok) + 1
    assert _value(after, runs, **failed) == _value(before, runs, **failed) + 1
