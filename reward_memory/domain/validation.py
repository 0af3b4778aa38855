"""Structural validation helpers (second tier): types, patterns and bounds.

Each raises ``invalid_argument`` (area ``reward_memory``) naming the dotted field.
Patterns are deliberately permissive for opaque references: URLs, local paths and
credentials are refused by the shape scan (``guards.scan``) *before* these run, as
guard reasons rather than errors.
"""

import datetime as dt
import re
from typing import Any

from loopx_site.core import clock
from loopx_site.core.errors import DomainError
from loopx_site.core.validation import require_credential_free_url
from reward_memory.errors import RewardMemoryError, invalid

REF_RE = re.compile(r"^[^\s\x00-\x1f\x7f]{1,256}$")
TOKEN_RE = re.compile(r"^[a-z][a-z0-9_.-]{0,63}$")
SURFACE_RE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$")
# a project id, optionally in LoopX's ``<kind>:<name>`` form (``repository:example``); a
# URL never passes (the part after the kind starts with a letter or digit)
PROJECT_RE = re.compile(r"^(?:[a-z][a-z0-9_]{0,31}:)?[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$")
# dotted segments of words; a ``:`` joins words as in LoopX's ``issue_fix:scope_selection``
ACTION_SCOPE_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_:-]*(\.[A-Za-z0-9_:-]+)*$")
DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
IDENT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
# a checkpoint id, optionally in LoopX's ``<kind>:<name>`` form (``repository:authority-map``)
CHECKPOINT_ID_RE = re.compile(r"^(?:[a-z][a-z0-9_]{0,31}:)?[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


def obj(value: Any, field: str, *, required: bool = True) -> dict[str, Any] | None:
    if value is None and not required:
        return None
    if not isinstance(value, dict):
        raise invalid(field, f"{field} must be an object")
    return value


def text(value: Any, field: str, *, max_length: int = 2000, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise invalid(field, f"{field} must be a non-empty string")
    if len(value) > max_length:
        raise invalid(field, f"{field} must be at most {max_length} characters")
    if any(ch in value for ch in "\x00\r") or any(
        ord(ch) < 32 and ch not in "\n\t" for ch in value
    ):
        raise invalid(field, f"{field} must not contain control characters")
    return value


def pattern(
    value: Any, field: str, regex: re.Pattern[str], *, required: bool = True, what: str = ""
) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not regex.fullmatch(value) or ".." in value.split("/"):
        raise invalid(field, f"{field} must be {what or 'match ' + regex.pattern}")
    return value


def ref(value: Any, field: str, *, required: bool = True) -> str | None:
    return pattern(value, field, REF_RE, required=required, what="an opaque reference")


def artifact_ref(value: Any, field: str, *, required: bool = True) -> str | None:
    """An opaque reference to an artifact; one that is a URL carries no credential in
    its user info, path, query or fragment (the shared URL rule of ``core.validation``)."""
    value = ref(value, field, required=required)
    if value is not None and ("://" in value or "@" in value or "?" in value):
        try:
            require_credential_free_url(value, field, area=RewardMemoryError.area)
        except DomainError as exc:
            raise invalid(field, exc.message, **exc.details) from None
    return value


def token(value: Any, field: str, *, required: bool = True) -> str | None:
    return pattern(value, field, TOKEN_RE, required=required, what="a lower-case token")


def surface(value: Any, field: str, *, required: bool = True) -> str | None:
    return pattern(value, field, SURFACE_RE, required=required, what="a module.surface id")


def project(value: Any, field: str, *, required: bool = True) -> str | None:
    return pattern(value, field, PROJECT_RE, required=required, what="a project id")


def identifier(value: Any, field: str, *, required: bool = True) -> str | None:
    return pattern(value, field, IDENT_RE, required=required, what="an identifier")


def checkpoint_id(value: Any, field: str = "checkpoint_id", *, required: bool = True):
    return pattern(value, field, CHECKPOINT_ID_RE, required=required, what="a checkpoint id")


def digest(value: Any, field: str, *, required: bool = True) -> str | None:
    return pattern(value, field, DIGEST_RE, required=required, what="a sha256:<hex> digest")


def choice(value: Any, field: str, choices: tuple[str, ...], *, required: bool = True):
    if value is None and not required:
        return None
    if value not in choices:
        raise invalid(field, f"{field} must be one of {', '.join(choices)}")
    return value


def boolean(value: Any, field: str, *, required: bool = True) -> bool | None:
    if value is None and not required:
        return None
    if not isinstance(value, bool):
        raise invalid(field, f"{field} must be true or false")
    return value


def integer(
    value: Any, field: str, *, minimum: int, maximum: int, required: bool = True
) -> int | None:
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise invalid(field, f"{field} must be an integer in {minimum}..{maximum}")
    return value


def timestamp(value: Any, field: str, *, required: bool = True) -> dt.datetime | None:
    if value is None and not required:
        return None
    try:
        return clock.parse_rfc3339(value)
    except (ValueError, TypeError):
        raise invalid(
            field, f"{field} must be an RFC 3339 timestamp like 2026-12-01T00:00:00Z"
        ) from None


def observed_at(value: Any, field: str = "observed_at") -> str:
    """A LoopX ``observed_at``: an ISO-8601 timestamp with a timezone (``…Z`` or an
    offset such as ``+00:00``, as LoopX accepts), returned as our UTC ``…Z`` text for the
    same instant. A ``…Z`` value is returned unchanged."""
    if isinstance(value, str):
        try:
            clock.parse_iso_z(value)
            return value
        except ValueError:
            pass
        try:
            parsed = clock.parse_rfc3339(value)
        except ValueError:
            parsed = None
        if parsed is not None:
            return parsed.replace(tzinfo=None).isoformat() + "Z"
    raise invalid(field, f"{field} must be an ISO timestamp with a timezone")


def string_list(
    value: Any,
    field: str,
    item,
    *,
    max_items: int = 32,
    required: bool = False,
    min_items: int = 0,
) -> list[str]:
    if value is None and not required:
        return []
    if not isinstance(value, list) or not min_items <= len(value) <= max_items:
        raise invalid(field, f"{field} must be a list of {min_items}..{max_items} items")
    return [item(v, f"{field}.{i}") for i, v in enumerate(value)]


def action_scopes(value: Any, field: str) -> list[str]:
    return string_list(
        value,
        field,
        lambda v, f: pattern(v, f, ACTION_SCOPE_RE, what="an action scope like review.merge"),
    )


MAX_DEPTH = 32


def _too_deep(document: Any) -> bool:
    """Iterative nesting check (contract documents are shallow; refuse before recursing)."""
    stack = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
    return False


def schema(document: Any, expected: str | tuple[str, ...], field: str = "schema_version") -> str:
    """The document is a JSON object of the expected contract (and not absurdly nested)."""
    # the document's own name, as the caller wrote it: ``corpus`` for
    # ``corpus.schema_version``, else the whole input
    where = field.rsplit(".", 1)[0] if "." in field else None
    if not isinstance(document, dict):
        raise invalid(where, f"{where or 'the input'} must be a JSON object")
    if _too_deep(document):
        raise invalid(where, f"{where or 'the input'} nests deeper than {MAX_DEPTH} levels")
    allowed = (expected,) if isinstance(expected, str) else expected
    version = document.get("schema_version")
    if version not in allowed:
        raise RewardMemoryError(
            "unsupported_schema",
            f"schema_version must be {' or '.join(allowed)}",
            field=field,
        )
    return version
