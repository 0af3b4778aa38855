"""Shape checks shared by services of every app (the second validation tier)."""

import re
from typing import Any

from loopx_site.core.errors import DomainError

IDENTIFIER_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def require_identifier(value: Any, field: str, *, area: str = "loopx") -> str:
    """Goal/Agent/Todo style ids: ``^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$``."""
    if not isinstance(value, str) or not IDENTIFIER_RE.fullmatch(value):
        raise DomainError(
            "invalid_argument",
            f"{field} must match {IDENTIFIER_RE.pattern}",
            field=field,
            area=area,
        )
    return value


def require_text(
    value: Any,
    field: str,
    *,
    min_length: int = 1,
    max_length: int,
    area: str = "loopx",
    pattern: re.Pattern[str] | None = None,
) -> str:
    """A bounded UTF-8 string without NUL characters, optionally matching ``pattern``."""
    if not isinstance(value, str):
        raise DomainError("invalid_argument", f"{field} must be a string", field=field, area=area)
    if "\x00" in value:
        raise DomainError(
            "invalid_argument", f"{field} must not contain NUL", field=field, area=area
        )
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (e.g. undecodable bytes in argv)
            raise DomainError(
                "invalid_argument", f"{field} must be valid UTF-8 text", field=field, area=area
            ) from None
    if not min_length <= len(value) <= max_length:
        raise DomainError(
            "invalid_argument",
            f"{field} must be {min_length}-{max_length} characters",
            field=field,
            area=area,
        )
    if pattern is not None and not pattern.fullmatch(value):
        raise DomainError(
            "invalid_argument", f"{field} must match {pattern.pattern}", field=field, area=area
        )
    return value
