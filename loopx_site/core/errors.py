"""The error registry and the envelope shared by every adapter.

Every error code this service emits is declared **once** — the shared ones in
``loopx_site/core/errors.toml``, each app's in the ``errors.toml`` beside its ``errors.py``
(``declare_file``) — with its HTTP status, LoopX's ``status`` word and a default
message. A code declared twice — by two apps, or with two statuses — fails at import, so
``not_found`` cannot mean 409 in one place and 404 in another.

Services raise ``DomainError`` (or an app subclass that sets ``area``); the CLI base
command prints ``envelope()`` and exits 2, the DRF exception handler renders the same
object with ``http_status``. There is one constructor signature —
``DomainError(code, message=None, *, field=None, details=None, area=None)`` — and the
status comes from the registry, never from the call site.

Messages name the caller's input by its field name in backticks (``"needs
`corpus_id`"``); the CLI shows the flag a person typed (``--corpus-id``,
``LoopxCommand.field_options``), the API the field name (``corpus_id``). Database
failures are translated in one place, ``from_database_error``.
"""

import logging
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from loopx_site.core.documents import error_document

logger = logging.getLogger("loopx.errors")

# LoopX's document ``status`` by HTTP status, where the status alone decides it
# (``loopx_wire.md``): every refusal answered 403 is ``forbidden`` whatever its finer
# code, every 401 ``unauthenticated``, every 503 ``unavailable``; everything else a
# caller can fix is ``invalid_request``.
WIRE_STATUS_BY_HTTP = {401: "unauthenticated", 403: "forbidden", 503: "unavailable"}


@dataclass(frozen=True)
class ErrorCode:
    code: str
    status: int
    message: str
    # LoopX's status word when the HTTP status alone does not decide it.
    wire: str | None = None
    owner: str = "loopx"

    @property
    def wire_status(self) -> str:
        if self.wire:
            return self.wire
        return WIRE_STATUS_BY_HTTP.get(self.status, "invalid_request")


REGISTRY: dict[str, ErrorCode] = {}

# What an unregistered code answers (a programming error the registry test catches; a
# caller still gets a structured error, never a traceback).
_UNDECLARED = ErrorCode("invalid_argument", 400, "The request is invalid.", owner="loopx")


def declare(owner: str, table: Mapping[str, tuple]) -> dict[str, ErrorCode]:
    """Declare ``owner``'s codes: ``{code: (status, message[, wire])}``. Returns the
    declared ``ErrorCode``s. Declaring a code another owner declared — or the same code
    with other facts — raises ``ImproperlyConfigured``."""
    declared = {}
    for code, facts in table.items():
        status, message, *rest = facts
        entry = ErrorCode(code, status, message, rest[0] if rest else None, owner)
        existing = REGISTRY.get(code)
        if existing is not None and existing != entry:
            raise ImproperlyConfigured(
                f"error code {code!r} is declared by {existing.owner} "
                f"({existing.status}) and again by {owner} ({status})"
            )
        REGISTRY[code] = declared[code] = entry
    return declared


_FACTS = {"status", "message", "loopx"}


def declare_file(owner: str, path: Path) -> dict[str, ErrorCode]:
    """Declare the codes of one ``errors.toml``: ``code = { status = N, message = "…" }``
    with an optional ``loopx = "word"`` (LoopX's status word where the HTTP status alone
    does not decide it). A malformed table raises ``ImproperlyConfigured`` at import."""
    with path.open("rb") as handle:
        table = tomllib.load(handle)
    facts = {}
    for code, entry in table.items():
        if (
            not isinstance(entry, dict)
            or not set(entry) <= _FACTS
            or not isinstance(entry.get("status"), int)
            or not isinstance(entry.get("message"), str)
        ):
            raise ImproperlyConfigured(f"{path}: {code!r} needs status (int) and message (str)")
        facts[code] = (entry["status"], entry["message"], entry.get("loopx"))
    return declare(owner, facts)


def lookup(code: str) -> ErrorCode:
    entry = REGISTRY.get(code)
    if entry is None:
        logger.error("undeclared error code %r", code)
        return _UNDECLARED
    return entry


# The codes every area shares; each app declares its own from its errors.toml.
CODES = declare_file("loopx_site.core", Path(__file__).with_name("errors.toml"))


def wire_status(code: str) -> str:
    """LoopX's ``status`` for one of our error codes."""
    return lookup(code).wire_status


class DomainError(Exception):
    """A coded, user-facing failure. Raised by services; rendered by adapters."""

    area = "loopx"

    def __init__(
        self,
        code: str,
        message: str | None = None,
        *,
        field: str | None = None,
        details: dict[str, Any] | None = None,
        area: str | None = None,
    ):
        entry = lookup(code)
        message = message or entry.message
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field
        self.details = details or {}
        self.http_status = entry.status
        self.wire_status = entry.wire_status
        # Extra top-level fields of the error document (e.g. ``current`` on a conflict).
        self.extra: dict[str, Any] = {}
        if area:
            self.area = area

    def envelope(self) -> dict[str, Any]:
        """LoopX's error document: ``error`` is the one-line message; our ``code``,
        ``field`` and ``details`` sit beside it as extra top-level fields."""
        return error_document(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, field={self.field!r})"


class RegistryError(DomainError):
    area = "loopx"


def invalid(field: str, message: str, *, area: str = "loopx", **details: Any) -> DomainError:
    """Shorthand for an ``invalid_argument`` error on one field."""
    return DomainError("invalid_argument", message, field=field, details=details, area=area)


# -- how a message names the caller's input -----------------------------------------
_FIELD_REF = re.compile(r"`([a-z][a-z0-9_]*)`")


def name_fields(message: str, name_of) -> str:
    """``message`` with each backticked reference to one of the caller's inputs rewritten
    by ``name_of`` (the CLI's ``--corpus-id``, the API's ``corpus_id``). ``name_of``
    returns ``None`` for a name that is not one of this caller's inputs: a backticked
    value (``extension `alpha` is not installed``) stays as written."""

    def rewrite(match: re.Match) -> str:
        named = name_of(match.group(1))
        return match.group(0) if named is None else named

    return _FIELD_REF.sub(rewrite, message)


# -- one translator for database failures -------------------------------------------
def from_database_error(exc: Exception, *, area: str = "loopx") -> DomainError | None:
    """The error a database failure answers with, for every adapter (CLI, API,
    middleware): a value the database refuses (``DataError``, e.g. a NUL character in
    PostgreSQL text) is bad input; any other ``DatabaseError`` is an outage. Nothing was
    written in either case (the atomic block rolled back). ``None`` if ``exc`` is not a
    database error."""
    from django.db import DatabaseError, DataError

    if isinstance(exc, DataError):
        logger.warning("database refused a value: %s", type(exc).__name__)
        return DomainError(
            "invalid_argument",
            "A value cannot be stored or compared; nothing was written.",
            area=area,
        )
    if isinstance(exc, DatabaseError):
        if is_permission_denied(exc):
            logger.warning("database refused access: %s", type(exc).__name__)
            return DomainError("database_permission_denied", area=area)
        logger.warning("database unavailable: %s", type(exc).__name__)
        return DomainError("database_unavailable", area=area)
    return None


def is_permission_denied(exc: BaseException) -> bool:
    """Whether the database refused the deployment's role (SQLSTATE 42501
    ``insufficient_privilege``, or a driver's "permission denied" / "access denied"
    message) — a grant to fix, not an outage to wait out."""
    for candidate in (exc, exc.__cause__, exc.__context__):
        if candidate is None:
            continue
        if "42501" in (getattr(candidate, "sqlstate", None), getattr(candidate, "pgcode", None)):
            return True
        text = str(candidate).lower()
        if "permission denied" in text or "access denied" in text:
            return True
    return False
