"""OpenTelemetry (``loopx_site.core.tracing``): off unless the ``OTEL_*`` variables ask;
one recall is one trace across view → service → provider, carrying digests and codes,
never the Goal/Agent ids, the query or a recalled summary."""

import json
import os
import subprocess
import sys

import pytest

from loopx_site.core import tracing
from loopx_site.core.canonical import text_digest_ref
from tests.helpers import ROOT
from tests.reward_memory import factories as f

SUMMARY = "Lead PR descriptions with the user-visible effect."
QUERY = "user visible effect"


@pytest.fixture
def spans():
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tracing.install(SimpleSpanProcessor(exporter))
    yield exporter
    tracing.uninstall()


@pytest.mark.privacy_exempt("feeds a recalled summary and query to show spans never carry them")
def test_one_recall_is_one_trace_across_view_service_and_provider(db, corpus, host_client, spans):
    receipt = f.ingested(
        event=f.scoped_event("ev-1", content_summary=SUMMARY),
        goal_id="demo",
        agent_id="author",
        execute=True,
    )
    assert receipt["status"] == "activated"
    spans.clear()
    body = {**f.recall_request(corpus, queries=[QUERY]), "execute": True}
    response = host_client("demo", "author").post(
        "/api/v1/reward-memory/recall/", body, format="json"
    )
    assert response.json()["status"] == "ok"
    finished = {s.name: s for s in spans.get_finished_spans()}
    server = finished["POST api/v1/reward-memory/recall/"]
    service = finished["reward_memory.recall"]
    provider = finished["reward_memory.provider.recall"]
    assert {s.context.trace_id for s in (server, service, provider)} == {server.context.trace_id}
    assert service.parent.span_id == server.context.span_id
    assert provider.parent.span_id == service.context.span_id
    assert service.attributes["loopx.goal_digest"] == text_digest_ref("demo")
    assert service.attributes["loopx.agent_digest"] == text_digest_ref("author")
    assert service.attributes["loopx.status"] == "ok"
    assert provider.attributes["loopx.provider"] == "local"
    assert server.attributes["http.route"] == "api/v1/reward-memory/recall/"
    every = json.dumps([dict(s.attributes) for s in spans.get_finished_spans()])
    for private in (SUMMARY, QUERY, '"demo"', '"author"', "/goals/demo"):
        assert private not in every


def test_a_server_span_never_carries_the_path_ids(db, agent, host_client, spans):
    host_client("demo", "author").get("/api/v1/goals/demo/agents/author/preferences/?x=secret")
    (server,) = [s for s in spans.get_finished_spans() if s.name.startswith("GET ")]
    route = "api/v1/goals/<str:goal_id>/agents/<str:agent_id>/preferences/"
    assert server.name == f"GET {route}"
    values = json.dumps(dict(server.attributes))
    assert "secret" not in values
    assert "/demo/" not in values


@pytest.mark.parametrize(
    ("environ", "on"),
    [
        ({}, False),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
        ({"OTEL_TRACES_EXPORTER": "console"}, True),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}, False),
    ],
)
def test_tracing_is_on_only_when_the_standard_variables_ask(environ, on):
    assert tracing.requested(environ) is on


@pytest.mark.slow
def test_a_cli_process_without_otel_variables_never_imports_opentelemetry():
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    code = (
        "import os, sys, django; os.environ.setdefault('DJANGO_SETTINGS_MODULE', "
        "'loopx_site.settings'); django.setup(); "
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
