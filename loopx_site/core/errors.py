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
    "goal_not_registered": 404,
    "agent_not_registered": 404,
    "not_found": 404,
    "method_not_allowed": 405,
    "revision_conflict": 409,
    "operation_conflict": 409,
    "idempotency_conflict": 409,
    "capacity_exceeded": 413,
    "payload_too_large": 413,
    "provider_failed": 503,
    "database_unavailable": 503,
    "internal_error": 500,
}


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
        if area:
            self.area = area

    def envelope(self) -> dict[str, Any]:
        return {
            "ok": False,
            "schema_version": f"{self.area}_error_v0",
            "error": {
                "code": self.code,
                "message": self.message,
                "field": self.field,
                "details": self.details,
            },
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, field={self.field!r})"


class RegistryError(DomainError):
    area = "loopx"


def invalid(field: str, message: str, *, area: str = "loopx", **details: Any) -> DomainError:
    """Shorthand for an ``invalid_argument`` error on one field."""
    return DomainError("invalid_argument", message, field=field, details=details, area=area)
