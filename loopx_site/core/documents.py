"""Documents of ``loopx_site.core``: the error envelope every adapter prints."""

from typing import Any


def error_document(err) -> dict[str, Any]:
    """LoopX's error document for a ``DomainError``: ``error`` is the one-line message;
    our ``code``, ``field`` and ``details`` sit beside it as extra top-level fields, then
    the error's ``extra`` fields (e.g. ``current`` on a conflict)."""
    document: dict[str, Any] = {
        "ok": False,
        "schema_version": f"{err.area}_error_v0",
        "status": err.wire_status,
        "error": err.message,
        "code": err.code,
        "field": err.field,
        "details": err.details,
    }
    document.update(err.extra)
    return document
