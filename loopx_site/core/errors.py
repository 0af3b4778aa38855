"""The error envelope shared by every adapter.

Services raise ``DomainError`` (or an app subclass that sets ``area``); the CLI base
command prints ``envelope()`` and exits 2, the DRF exception handler renders the same
object with ``http_status``. Codes are lower_snake and stable.
"""

from typing import Any

# Default HTTP status of the codes shared across areas; an app may pass ``status``.
STATUS_BY_CODE = {
    "invalid_argument": 400,
    "invalid_json": 400,
    "invalid_context": 400,
    "not_authenticated": 401,
    "scope_forbidden": 403,
    "permission_required": 403,
    "goal_not_registered": 404,
    "agent_not_registered": 404,
    "not_found": 404,
    "method_not_allowed": 405,
    "throttled": 429,
    "csrf_failed": 403,
    "revision_conflict": 409,
    "operation_conflict": 409,
    "idempotency_conflict": 409,
    "capacity_exceeded": 413,
    "payload_too_large": 413,
    "provider_failed": 503,
    "database_unavailable": 503,
    "internal_error": 500,
}


# LoopX's document ``status`` for an error code (``loopx_wire.md``): the conflict
# statuses LoopX has, ``unavailable`` for a store that cannot be read, ``forbidden`` for
# every refusal answered 403 (whatever its finer code), and ``invalid_request`` for
# everything else a caller can fix. Our finer ``code`` stays beside it in the envelope.
WIRE_STATUS_BY_CODE = {
    "revision_conflict": "revision_conflict",
    "operation_conflict": "operation_conflict",
    "database_unavailable": "unavailable",
    "store_unavailable": "unavailable",
    "not_authenticated": "unauthenticated",
    "scope_forbidden": "forbidden",
    "permission_required": "forbidden",
    "csrf_failed": "forbidden",
    "throttled": "throttled",
    "internal_error": "internal_error",
}


# The document ``status`` of an HTTP status, where the status alone decides it.
WIRE_STATUS_BY_HTTP = {401: "unauthenticated", 403: "forbidden"}


def wire_status(code: str, http_status: int | None = None) -> str:
    """LoopX's ``status`` for one of our error codes (answered with ``http_status``):
    every 403 is ``forbidden`` — ``reviewer_not_authorized``, ``agent_not_allowlisted``,
    ``experiment_route_unavailable`` … alike — and every 401 ``unauthenticated``."""
    if http_status in WIRE_STATUS_BY_HTTP:
        return WIRE_STATUS_BY_HTTP[http_status]
    return WIRE_STATUS_BY_CODE.get(code, "invalid_request")


class DomainError(Exception):
    """A coded, user-facing failure. Raised by services; rendered by adapters."""

    area = "loopx"

    def __init__(
        self,
        code: str,
        message: str,
        *,
        field: str | None = None,
        details: dict[str, Any] | None = None,
        status: int | None = None,
        area: str | None = None,
    ):
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field
        self.details = details or {}
        self.http_status = status or STATUS_BY_CODE.get(code, 400)
        # Extra top-level fields of the error document (e.g. ``current`` on a conflict).
        self.extra: dict[str, Any] = {}
        if area:
            self.area = area

    @property
    def wire_status(self) -> str:
        return wire_status(self.code, self.http_status)

    def envelope(self) -> dict[str, Any]:
        """LoopX's error document: ``error`` is the one-line message; our ``code``,
        ``field`` and ``details`` sit beside it as extra top-level fields."""
        document: dict[str, Any] = {
            "ok": False,
            "schema_version": f"{self.area}_error_v0",
            "status": self.wire_status,
            "error": self.message,
            "code": self.code,
            "field": self.field,
            "details": self.details,
        }
        document.update(self.extra)
        return document

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, field={self.field!r})"


class RegistryError(DomainError):
    area = "loopx"


def invalid(field: str, message: str, *, area: str = "loopx", **details: Any) -> DomainError:
    """Shorthand for an ``invalid_argument`` error on one field."""
    return DomainError("invalid_argument", message, field=field, details=details, area=area)
