"""Issue 34: traces in a Celery prefork pool. The worker's parent process configures
tracing when Django loads, then forks its pool; each pool process, on Celery's
``worker_process_init``, drops the provider it inherited and installs its own (exporter,
processor thread, Celery instrumentation). Shown with a real ``os.fork`` and the real
signal: the forked child runs a task and its span lands in the child's own exporter."""

import json
import os

import pytest
from celery.signals import worker_process_init

from loopx_site.celery import app
from loopx_site.core import tracing


@app.task(name="tests.background.trace_probe")
def trace_probe():
    return "probed"


@pytest.fixture
def parent_tracing(monkeypatch):
    """The parent as a worker's main process: tracing on (OTEL_* set) and installed."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    exporter = InMemorySpanExporter()
    tracing.install(SimpleSpanProcessor(exporter))
    yield exporter
    tracing.uninstall()


def _in_forked_child(write_end: int, parent_provider_id: int) -> None:
    """The pool process: Celery's signal, one task run, a report down the pipe."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    child_exporter = InMemorySpanExporter()
    tracing.exporter_from_environment = lambda: child_exporter  # this process only
    worker_process_init.send(sender=None)
    provider = tracing._state["provider"]
    assert trace_probe.apply().get() == "probed"
    provider.force_flush()
    report = {
        "own_provider": provider is not None and id(provider) != parent_provider_id,
        "spans": [s.name for s in child_exporter.get_finished_spans()],
    }
    os.write(write_end, json.dumps(report).encode())


def test_a_forked_pool_process_traces_its_tasks_with_its_own_provider(parent_tracing):
    parent_provider_id = id(tracing._state["provider"])
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        code = 0
        try:
            os.close(read_end)
            _in_forked_child(write_end, parent_provider_id)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        raw = pipe.read()  # EOF when the child exits: no timing involved
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    report = json.loads(raw)
    assert report["own_provider"]
    assert "run/tests.background.trace_probe" in report["spans"]
    # the parent's exporter saw nothing of the child's run
    assert parent_tracing.get_finished_spans() == ()


def test_a_pool_process_stays_untraced_without_otel_variables(monkeypatch):
    for name in list(os.environ):
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)
    assert tracing.configure_in_worker_process() is False
    assert not tracing.enabled()
