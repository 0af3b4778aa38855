"""Structured logging: one line per event, with the request id.

* ``RequestIdMiddleware`` (outermost) takes a well-formed incoming ``X-Request-ID`` or
  makes one, echoes it on the response, and logs one ``event=request`` line per
  request (level from the status: info < 400, warning 4xx, error 5xx). The line names
  the matched route pattern and view, never the raw path or query string.
* ``RequestIdFilter`` puts the current request id on every record (``-`` outside a
  request, e.g. in commands).
* ``KeyValueFormatter`` (``LOG_FORMAT=kv``, default) and ``JsonFormatter``
  (``LOG_FORMAT=json``) write each record on one line; a traceback (only ever on a
  5xx or a real error) is folded into one escaped field.
* ``ExpectedClientErrorFilter`` drops Django's own ``django.request`` records for
  4xx: the request line already says it, without the traceback Django attaches to a
  ``PermissionDenied``.
"""

import contextvars
import json
import logging
import re
import secrets
import time
from typing import Any

REQUEST_ID_HEADER = "X-Request-ID"
_VALID_ID = re.compile(r"^[A-Za-z0-9._:-]{8,64}$")
_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("loopx_request_id", default="-")
_STANDARD = set(vars(logging.LogRecord("x", 0, "x", 0, "x", None, None))) | {
    "message",
    "asctime",
    "request_id",
}

request_logger = logging.getLogger("loopx.request")


def current_request_id() -> str:
    return _request_id.get()


class RequestIdMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        incoming = request.META.get("HTTP_X_REQUEST_ID", "")
        request_id = incoming if _VALID_ID.fullmatch(incoming) else secrets.token_hex(8)
        request.request_id = request_id
        token = _request_id.set(request_id)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
            response[REQUEST_ID_HEADER] = request_id
            self._log(request, response.status_code, started)
            return response
        finally:
            _request_id.reset(token)

    @staticmethod
    def _log(request, status: int, started: float) -> None:
        match = getattr(request, "resolver_match", None)
        level = logging.ERROR if status >= 500 else logging.WARNING if status >= 400 else 0
        level = level or logging.INFO
        request_logger.log(
            level,
            "request",
            extra={
                "event": "request",
                "method": request.method,
                "route": match.route if match else "-",
                "view": match.view_name if match else "-",
                "status": status,
                "duration_ms": round((time.perf_counter() - started) * 1000, 1),
            },
        )


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = _request_id.get()
        return True


class ExpectedClientErrorFilter(logging.Filter):
    """Drop ``django.request`` records of 4xx responses (our request line covers them)."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        return not (status is not None and 400 <= status < 500)


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        + f".{int(record.msecs):03d}Z",
        "level": record.levelname,
        "logger": record.name,
        "request_id": getattr(record, "request_id", "-"),
        "msg": record.getMessage(),
    }
    for key, value in vars(record).items():
        extra = key not in _STANDARD and not key.startswith("_") and key not in fields
        if extra and (isinstance(value, str | int | float | bool) or value is None):
            fields[key] = value
    if record.exc_info and record.exc_info[0] is not None:
        fields["exc_type"] = record.exc_info[0].__name__
        fields["traceback"] = logging.Formatter().formatException(record.exc_info)
    return fields


def _kv(value: Any) -> str:
    text = "-" if value is None else str(value)
    if text and re.fullmatch(r"[^\s\"=]+", text):
        return text
    return json.dumps(text, ensure_ascii=False)  # quoted, newlines escaped: one line


class KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return " ".join(f"{k}={_kv(v)}" for k, v in _fields(record).items())


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(_fields(record), ensure_ascii=False, default=str)


class NoTraceback(logging.Filter):
    """Keep the record, drop its traceback (for refusals that are expected)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = None
        record.exc_text = None
        return True
