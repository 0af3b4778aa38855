"""OpenTelemetry traces: off by default, on with the standard ``OTEL_*`` variables.

Tracing is on when ``OTEL_SDK_DISABLED`` is not ``true`` and either
``OTEL_TRACES_EXPORTER`` names an exporter (``otlp`` or ``console``) or an OTLP endpoint
is set (``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``). The
OTLP/HTTP exporter reads its own ``OTEL_EXPORTER_OTLP_*`` variables (headers, timeout,
compression); ``OTEL_SERVICE_NAME`` names the service (``loopx-memory`` by default).

Instrumented when on: Django (one server span per request, named by its route pattern),
psycopg (one span per statement: SQL with placeholders, never values), Celery (task
publish and run, linked across the broker), ``urllib`` (the outgoing HTTP of the
OpenViking provider), and our own spans around a recall and its provider call.

Privacy: a span carries digests and codes, never content. A server span's URL
attributes are replaced by the route pattern (no Goal/Agent id, no query string); an
outgoing call keeps only scheme, host and method; our spans carry
``loopx.goal_digest`` / ``loopx.agent_digest`` (``sha256:…`` of the id), the corpus and
provider ids operators registered, and result codes.

Start-up stays cheap: nothing of OpenTelemetry is imported unless tracing is on.
"""

from __future__ import annotations

import contextlib
import os
import urllib.parse
from collections.abc import Iterator
from typing import Any

from loopx_site.core.canonical import text_digest_ref

_state: dict[str, Any] = {"tracer": None, "provider": None, "instrumentors": []}

#: Server-span attributes that would carry a request's path or query: replaced by the route.
_URL_ATTRIBUTES = ("http.url", "http.target", "url.full", "url.path", "url.query")
#: Client-span attributes that would carry an outgoing URL's path or query.
_CLIENT_URL_ATTRIBUTES = ("http.url", "url.full")


def requested(environ=os.environ) -> bool:
    """Whether the ``OTEL_*`` variables ask for traces."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter:
        return exporter != "none"
    return bool(
        environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def enabled() -> bool:
    return _state["tracer"] is not None


def configure_from_environment(*, set_global: bool = True) -> bool:
    """Called once per process at start-up (``CoreConfig.ready``): installs tracing when
    the ``OTEL_*`` variables ask for it. Returns whether tracing is on."""
    if enabled() or not requested():
        return enabled()
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    install(BatchSpanProcessor(exporter_from_environment()), set_global=set_global)
    return True


def exporter_from_environment():
    """The span exporter ``OTEL_TRACES_EXPORTER`` names (``otlp`` by default)."""
    kind = os.environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() or "otlp"
    if kind == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def configure_in_worker_process() -> bool:
    """A forked Celery pool process (``worker_process_init``): start tracing afresh.

    The parent configured tracing when Django loaded, before the pool forked; its span
    processor's export thread and the exporter's HTTP connection belong to the parent.
    Each pool process therefore drops what it inherited (without flushing it: those
    spans are the parent's to send) and installs its own provider, exporter and
    instrumentors — Celery's included, so a task run in this process is traced here.
    The global provider stays the parent's (OpenTelemetry sets it once per process);
    our instrumentors and spans use this process's own. Returns whether tracing is on."""
    if not requested():
        return False
    for instrumentor in _state["instrumentors"]:
        if instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.uninstrument()
    _state.update(tracer=None, provider=None, instrumentors=[])
    return configure_from_environment(set_global=False)


def install(processor, *, set_global: bool = False):
    """Instrument this process, exporting through ``processor`` (tests pass a
    ``SimpleSpanProcessor`` of an in-memory exporter). Returns the tracer provider."""
    from opentelemetry import trace
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.instrumentation.urllib import URLLibInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    name = os.environ.get("OTEL_SERVICE_NAME") or "loopx-memory"
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    provider.add_span_processor(processor)
    if set_global:
        trace.set_tracer_provider(provider)
    instrumentors = [
        (DjangoInstrumentor(), {"response_hook": _server_response_hook}),
        (PsycopgInstrumentor(), {"enable_commenter": False}),
        (CeleryInstrumentor(), {}),
        (URLLibInstrumentor(), {"response_hook": _client_response_hook}),
    ]
    for instrumentor, options in instrumentors:
        if not instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.instrument(tracer_provider=provider, **options)
    _state.update(
        provider=provider,
        tracer=provider.get_tracer("loopx_site"),
        instrumentors=[i for i, _ in instrumentors],
    )
    return provider


def uninstall() -> None:
    """Undo ``install`` (tests)."""
    for instrumentor in _state["instrumentors"]:
        if instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.uninstrument()
    if _state["provider"] is not None:
        _state["provider"].shutdown()
    _state.update(tracer=None, provider=None, instrumentors=[])


def _server_response_hook(span, request, response) -> None:
    """The span names its route pattern; no path, id or query string stays on it."""
    if span is None or not span.is_recording():
        return
    match = getattr(request, "resolver_match", None)
    route = (match.route if match else "") or "unmatched"
    for key in _URL_ATTRIBUTES:
        span.set_attribute(key, route if key != "url.query" else "")
    span.set_attribute("http.route", route)
    span.update_name(f"{request.method} {route}")


def _client_response_hook(span, request, response) -> None:
    """An outgoing call keeps scheme and host only (the path may name a resource)."""
    if span is None or not span.is_recording():
        return
    url = getattr(request, "full_url", "") or ""
    parts = urllib.parse.urlsplit(url)
    for key in _CLIENT_URL_ATTRIBUTES:
        span.set_attribute(key, f"{parts.scheme}://{parts.netloc}/")


def digest(value: str | None) -> str:
    """The attribute value of an identifier on a span: its digest, never the id."""
    return text_digest_ref(value) if value else ""


@contextlib.contextmanager
def span(name: str, **attributes: Any) -> Iterator[Any]:
    """One internal span (a no-op when tracing is off). Attribute values must be codes,
    digests or registered ids — never content; ``None`` values are left out."""
    tracer = _state["tracer"]
    if tracer is None:
        yield None
        return
    with tracer.start_as_current_span(name) as current:
        for key, value in attributes.items():
            if value is not None:
                current.set_attribute(f"loopx.{key}", value)
        yield current
