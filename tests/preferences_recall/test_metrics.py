"""Issue 34: the semantic preference recall hook is counted like Reward Memory's recall —
``loopx_recalls_total`` / ``loopx_recall_duration_seconds`` under ``area="preferences"``
per registered config, and its provider failures by kind in
``loopx_provider_failures_total{area="preferences"}`` — for fail-open and fail-closed
surfaces alike; a preview counts nothing."""

import pytest

from preferences import services
from preferences.recall.errors import SemanticPreferenceError
from tests.preferences_recall.conftest import SURFACE, legacy_config, provider
from tests.reward_memory.test_metrics import _scrape, _value

pytestmark = pytest.mark.django_db

RECALL = "/api/v1/semantic-preferences/recall/"
AREA = "preferences"


def _recalls(text: str, **labels) -> float:
    return _value(text, "loopx_recalls_total", area=AREA, **labels)


def test_executed_recalls_are_counted_per_config_as_ok_or_empty_with_latency(
    goal, host_client, bind
):
    bind("team-prefs", provider("valid"))
    bind("quiet-prefs", provider("valid", "--items", "0"))
    client = host_client("demo")
    before = _scrape()
    for name in ("team-prefs", "quiet-prefs", "quiet-prefs"):
        body = {"config": name, "surface": SURFACE, "execute": True}
        assert client.post(RECALL, body, format="json").json()["status"] == "completed"
    client.post(RECALL, {"config": "team-prefs", "surface": SURFACE}, format="json")  # preview
    after = _scrape()
    assert (
        _recalls(after, corpus="team-prefs", status="ok")
        - _recalls(before, corpus="team-prefs", status="ok")
        == 1
    )
    assert (
        _recalls(after, corpus="quiet-prefs", status="empty")
        - _recalls(before, corpus="quiet-prefs", status="empty")
        == 2
    )
    seconds = "loopx_recall_duration_seconds_count"
    moved = _value(after, seconds, area=AREA, corpus="team-prefs") - _value(
        before, seconds, area=AREA, corpus="team-prefs"
    )
    assert moved == 1  # the preview ran nothing and was not timed


def test_a_fail_open_provider_failure_is_counted_by_kind(write_json):
    path = write_json("cfg.json", legacy_config(provider("garbage"), policy="fail_open"))
    before = _scrape()
    result = services.recall(path, project="p", surface=SURFACE, execute=True)
    assert result["status"] == "provider_unavailable"
    after = _scrape()
    failures = "loopx_provider_failures_total"
    assert _value(after, failures, area=AREA, kind="invalid_json") == (
        _value(before, failures, area=AREA, kind="invalid_json") + 1
    )
    # a config file is not a registered corpus: its path never becomes a label
    assert _recalls(after, corpus="-", status="provider_unavailable") == (
        _recalls(before, corpus="-", status="provider_unavailable") + 1
    )
    assert str(path) not in after


def test_a_fail_closed_provider_failure_is_counted_before_the_error(write_json):
    path = write_json("cfg.json", legacy_config(provider("nonzero_secret"), policy="fail_closed"))
    before = _scrape()
    with pytest.raises(SemanticPreferenceError):
        services.recall(path, project="p", surface=SURFACE, execute=True)
    after = _scrape()
    failures = "loopx_provider_failures_total"
    assert _value(after, failures, area=AREA, kind="nonzero_exit") == (
        _value(before, failures, area=AREA, kind="nonzero_exit") + 1
    )
    assert _recalls(after, status="provider_unavailable") == (
        _recalls(before, status="provider_unavailable") + 1
    )


def test_one_preference_recall_is_one_trace_across_view_hook_and_provider(goal, host_client, bind):
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from loopx_site.core import tracing
    from loopx_site.core.canonical import text_digest_ref

    bind("team-prefs", provider("valid"))
    exporter = InMemorySpanExporter()
    tracing.install(SimpleSpanProcessor(exporter))
    try:
        body = {"config": "team-prefs", "surface": SURFACE, "execute": True}
        assert host_client("demo").post(RECALL, body, format="json").status_code == 200
    finally:
        tracing.uninstall()
    finished = {s.name: s for s in exporter.get_finished_spans()}
    server = finished["POST api/v1/semantic-preferences/recall/"]
    hook = finished["preferences.recall"]
    run = finished["preferences.provider.recall"]
    assert hook.parent.span_id == server.context.span_id
    assert run.parent.span_id == hook.context.span_id
    assert hook.attributes["loopx.goal_digest"] == text_digest_ref("demo")
    assert hook.attributes["loopx.status"] == "ok"
    assert hook.attributes["loopx.corpus"] == "team-prefs"
