"""Session-wide privacy scan (a pytest plugin, loaded from ``tests/pytest_env.py``).

While the suite runs it captures everything the service emits to someone else:

* every error envelope (``DomainError.envelope``),
* every document a LoopX command prints (``LoopxCommand.emit``),
* every DRF JSON response body (``JSONRenderer.render``),
* every log record a logger passes on to its handlers, i.e. after the logger's own
  filters (``Logger.callHandlers`` is wrapped): what is actually written, not what a
  filter such as ``ExpectedClientErrorFilter`` drops.

At session end each public text is scanned for absolute local paths, provider commands,
credential-like strings (``loopx_site.core.scanner.scan_text``) and for any source quote or recalled
summary seen during the run. Private results go to their caller only and are not
public: for those, only the public part is scanned, and their recalled summaries join
the set of strings no public text may contain (see ``PRIVATE``).

A test that deliberately makes such strings (a guard test feeding a credential-like
value, say) opts out with ``@pytest.mark.privacy_exempt("why")``; everything captured
while it runs is ignored. ``LOOPX_PRIVACY_SCAN=off`` turns the plugin off.
"""

import contextlib
import json
import logging
import os
from dataclasses import dataclass, field

import pytest

from loopx_site.core.scanner import scan_text

MIN_SENSITIVE = 12  # shorter quotes/summaries are too generic to attribute


# -- what is private ---------------------------------------------------------------------
#: Documents returned only to the authenticated caller of its own scope, not projected
#: anywhere. The journal history page carries each entry's ``source_quote`` (the owner's
#: words, kept for audit) — LEAD: confirm with the journal owner (h3) that the history
#: read is meant to return quotes; if not, drop this entry and the scan will flag it.
PRIVATE_TO_CALLER = {"semantic_preference_agent_history_v0", "agent_preferences_v1"}
#: The journal documents (read/remember/retire/history, and a conflict's envelope) return
#: ``current`` — the caller's own scope, whose items carry ``source_quote`` by the wire
#: contract (loopx_wire.md) — echo the caller's ``proposed`` item, and page the caller's
#: own ``events``. Those parts are skipped wherever they appear; the rest (status,
#: ``receipt``, messages) is scanned.
JOURNAL_SCHEMAS = {"semantic_preference_agent_v1"}
JOURNAL_CALLER_FIELDS = {"current", "proposed", "events"}
CURRENT_VIEW_SCHEMA = "agent_preferences_v1"
#: What the session scan refuses: credentials and local paths (``scan_text`` codes).
#: Public URLs and host names are allowed in receipts by design (``artifact_ref`` is a
#: public https URL), so ``url``/``host``/``ip_address``/``email`` are not findings here.
PRIVATE_CODES = {"credential", "url_with_credentials", "local_path"}
CALLER_INPUT_FIELDS = {"candidate", "revised_candidate"}
#: Host packets (quota decision, turn packet, turn-start dispatch) are scanned whole,
#: required reads included: a read names the host's relative command
#: (``python manage.py …``), so this server's interpreter or checkout path is a finding.


def _public_part(doc):
    """(public part to scan, recalled summaries it reveals to its caller)."""
    if not isinstance(doc, dict):
        return doc, []
    schema = doc.get("schema_version", "")
    if "openapi" in doc:  # the API's own documentation, not an emitted document
        return None, []
    if schema in JOURNAL_SCHEMAS:
        return {k: v for k, v in doc.items() if k not in JOURNAL_CALLER_FIELDS}, []
    if isinstance(doc.get("current"), dict) and (
        doc["current"].get("schema_version") == CURRENT_VIEW_SCHEMA
    ):  # a conflict envelope carries the caller's current view
        doc = {k: v for k, v in doc.items() if k != "current"}
    if schema == "reward_memory_recall_v0":  # LoopX's answer over the private result
        public = {k: v for k, v in doc.items() if k != "items"}
        return public, _summaries(doc.get("items"))
    if isinstance(doc.get("record"), dict) and (
        doc["record"].get("schema_version") == "reward_memory_candidate_v0"
    ):  # a review answers its reviewer with the reviewed candidate as it would be stored
        doc = {k: v for k, v in doc.items() if k != "record"}
    if schema == "reward_memory_runtime_hook_v0":  # the module's own bounded context
        public = {k: v for k, v in doc.items() if k != "context"}
        return public, _summaries((doc.get("context") or {}).get("guidance"))
    if schema == "reward_memory_recall_result_v0":
        return doc.get("public_packet"), _summaries(doc.get("items"))
    if schema in ("semantic_preference_recall_v0", "semantic_preference_provider_response_v0"):
        public = {k: v for k, v in doc.items() if k != "items"}
        return public, _summaries(doc.get("items"))
    if schema == "reward_memory_candidate_review_v0":  # the reviewer's own candidate echoed
        # and, when marked, the live record of the same corpus it restates (``duplicate_of``:
        # the record's summary goes to that corpus's reviewer only, like a recall's items)
        public = {k: v for k, v in doc.items() if k not in CALLER_INPUT_FIELDS | {"duplicate_of"}}
        duplicate = doc.get("duplicate_of")
        return public, _summaries(
            [{"summary": duplicate.get("record_summary")}] if isinstance(duplicate, dict) else None
        )
    if schema in PRIVATE_TO_CALLER:
        return None, []
    if schema == "loopx_host_token_v0":  # the secret is shown once, to its creator
        return {k: v for k, v in doc.items() if k != "token"}, []
    if schema == "loopx_demo_v0" and isinstance(doc.get("operator"), dict):
        return {**doc, "operator": {**doc["operator"], "password": None}}, []
    return doc, []


def _summaries(items) -> list[str]:
    if not isinstance(items, list):
        return []
    summaries = (i.get("summary") for i in items if isinstance(i, dict))
    return [s for s in summaries if isinstance(s, str)]


# -- capture -----------------------------------------------------------------------------
@dataclass
class Capture:
    texts: list[tuple[str, str, str]] = field(default_factory=list)  # (test, channel, text)
    sensitive: set[str] = field(default_factory=set)
    current: str = "<session>"
    exempt: bool = False

    def add(self, channel: str, payload) -> None:
        if self.exempt:
            return
        public, recalled = _public_part(payload)
        self.sensitive.update(s for s in recalled if len(s) >= MIN_SENSITIVE)
        if public is None:
            return
        text = (
            public
            if isinstance(public, str)
            else json.dumps(public, default=str, ensure_ascii=False)
        )
        self.texts.append((self.current, channel, text))

    def quote(self, value) -> None:
        if not self.exempt and isinstance(value, str) and len(value) >= MIN_SENSITIVE:
            self.sensitive.add(value)


CAPTURE = Capture()


def _wrap(owner, name: str, make):
    original = getattr(owner, name)
    setattr(owner, name, make(original))
    return original


def _install() -> list[tuple[object, str, object]]:
    from rest_framework.renderers import JSONRenderer

    from loopx_site.core.cli import LoopxCommand
    from loopx_site.core.errors import DomainError

    restore = []

    def envelope(original):
        def wrapped(self):
            doc = original(self)
            CAPTURE.add("error_envelope", doc)
            return doc

        return wrapped

    def emit(original):
        def wrapped(self, payload, *args, **kwargs):
            CAPTURE.add("cli", payload)
            return original(self, payload, *args, **kwargs)

        return wrapped

    def render(original):
        def wrapped(self, data, accepted_media_type=None, renderer_context=None):
            # responses only: the test client also renders request bodies here
            if isinstance(data, dict | list) and (renderer_context or {}).get("response"):
                CAPTURE.add("api", data)
            return original(self, data, accepted_media_type, renderer_context)

        return wrapped

    restore.append((DomainError, "envelope", _wrap(DomainError, "envelope", envelope)))
    restore.append((LoopxCommand, "emit", _wrap(LoopxCommand, "emit", emit)))
    restore.append((JSONRenderer, "render", _wrap(JSONRenderer, "render", render)))

    # Source quotes the suite writes: no public text may repeat them.
    try:
        from preferences import services as preference_services

        for name in ("remember", "retire"):
            if hasattr(preference_services, name):

                def quoting(original):
                    def wrapped(*args, **kwargs):
                        CAPTURE.quote(kwargs.get("source_quote"))
                        return original(*args, **kwargs)

                    return wrapped

                restore.append(
                    (preference_services, name, _wrap(preference_services, name, quoting))
                )
    except ImportError:
        pass
    return restore


def _capture_logs():
    """Every record a logger hands to its handlers, whatever handlers are configured.
    ``Logger.handle`` applies the logger's filters and then calls ``callHandlers`` (once
    per record; it walks the hierarchy itself), so wrapping ``callHandlers`` sees what is
    emitted, after the filters. The class-level wrap survives ``django.setup()`` re-running
    ``dictConfig`` (every in-process ``manage.py`` call does)."""
    original = logging.Logger.callHandlers

    def call_handlers(self, record):
        with contextlib.suppress(Exception):
            CAPTURE.add(f"log:{record.name}", record.getMessage())
        return original(self, record)

    logging.Logger.callHandlers = call_handlers
    return (logging.Logger, "callHandlers", original)


# -- pytest hooks ------------------------------------------------------------------------
_ENABLED = os.environ.get("LOOPX_PRIVACY_SCAN", "on").lower() not in ("off", "0", "false")
_STATE: dict = {}


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "privacy_exempt(reason): this test deliberately emits private-looking strings; "
        "the session privacy scan ignores what it emits",
    )


@pytest.fixture(scope="session", autouse=True)
def _privacy_capture():
    if not _ENABLED:
        yield
        return
    _STATE["restore"] = [*_install(), _capture_logs()]
    yield


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    CAPTURE.current = item.nodeid
    CAPTURE.exempt = item.get_closest_marker("privacy_exempt") is not None
    try:
        return (yield)
    finally:
        CAPTURE.current = "<session>"
        CAPTURE.exempt = False


def findings() -> list[str]:
    sensitive = sorted(CAPTURE.sensitive, key=len, reverse=True)
    out = []
    for test, channel, text in CAPTURE.texts:
        reasons = [code for code in scan_text(text) if code in PRIVATE_CODES]
        hit = next((s for s in sensitive if s in text), None)
        where = 0
        if hit is not None:
            reasons.append(f"recalled_or_quoted_text({hit[:60]!r})")
            where = max(0, text.index(hit) - 120)
        if reasons:
            out.append(f"{test} [{channel}] {','.join(reasons)}: …{text[where : where + 300]}")
    return out


def _is_xdist_worker(config) -> bool:
    return hasattr(config, "workerinput")


def pytest_sessionfinish(session, exitstatus):
    """Scan what this process captured. Under pytest-xdist each worker scans its own
    tests and hands its findings and count to the controller (``workeroutput``), which
    fails the run and reports them (:func:`pytest_testnodedown`)."""
    if not _ENABLED:
        return
    found = findings() if CAPTURE.texts else []
    if _is_xdist_worker(session.config):
        session.config.workeroutput["privacy_scan"] = {
            "findings": found,
            "scanned": len(CAPTURE.texts),
        }
        return
    if CAPTURE.texts:
        _STATE["findings"] = [*_STATE.get("findings", []), *found]
        _STATE["scanned"] = _STATE.get("scanned", 0) + len(CAPTURE.texts)
    if _STATE.get("findings") and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """Controller side of pytest-xdist: collect one worker's scan (runs before the
    controller's own ``pytest_sessionfinish``)."""
    result = getattr(node, "workeroutput", {}).get("privacy_scan")
    if result is None:
        return
    _STATE["findings"] = [*_STATE.get("findings", []), *result["findings"]]
    _STATE["scanned"] = _STATE.get("scanned", 0) + result["scanned"]


def pytest_terminal_summary(terminalreporter):
    found = _STATE.get("findings")
    if found is None:
        return
    tr = terminalreporter
    if not found:
        tr.write_line(f"privacy scan: {_STATE.get('scanned', 0)} emitted documents/log lines clean")
        return
    tr.section("privacy scan", sep="=", red=True)
    tr.write_line(f"{len(found)} emitted texts carry private material:")
    for line in found[:50]:
        tr.write_line("  " + line)
    if len(found) > 50:
        tr.write_line(f"  … and {len(found) - 50} more")


__all__ = ["CAPTURE", "findings"]
