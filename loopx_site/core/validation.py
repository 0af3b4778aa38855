"""Shape checks shared by services of every app (the second validation tier)."""

import re
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

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


# -- the URL rule: no credentials in an artifact (or evidence) URL ---------------------

#: Query/fragment parameter names that carry credentials (``?token=``, ``access_token``,
#: ``X-Amz-Signature``, ``sig``, ``code`` …), whatever their value.
CREDENTIAL_PARAM_RE = re.compile(
    r"(token|secret|passw|signature|^sig$|credential|api_?key|access_?key|auth|session|"
    r"^key$|^code$|x-amz-|sas)",
    re.IGNORECASE,
)
_CREDENTIAL_CODES = frozenset({"credential", "url_with_credentials"})


def _credential_like(text: str) -> bool:
    from loopx_site.core import scanner

    return bool(_CREDENTIAL_CODES & set(scanner.scan_text(text)))


def credential_like_segment(path: str) -> bool:
    """True when a ``/``-separated segment of ``path`` (percent-decoded) is credential-like
    to the project's secret scanner — the path half of the URL rule, for tokens that name
    a location without a scheme (``example.com/<token>``)."""
    return any(segment and _credential_like(unquote(segment)) for segment in path.split("/"))


def url_credential_part(value: str) -> str | None:
    """Which part of the URL ``value`` carries a credential — ``userinfo``, ``path``,
    ``query`` or ``fragment`` — or ``None``. Each path segment and each query/fragment
    value (percent-decoded) goes through the project's secret scanner
    (``loopx_site.core.scanner``); a credential-named parameter is refused whatever
    its value; any ``user[:password]@`` is refused."""
    try:
        parts = urlsplit(value)
    except ValueError:
        return "userinfo" if "@" in value else None
    if "@" in parts.netloc:
        return "userinfo"
    if credential_like_segment(parts.path):
        return "path"
    for name, part in (("query", parts.query), ("fragment", parts.fragment)):
        pairs = parse_qsl(part, keep_blank_values=True)
        for key, item in pairs:
            if CREDENTIAL_PARAM_RE.search(key) or (item and _credential_like(item)):
                return name
        if part and not pairs and _credential_like(unquote(part)):
            return name
    return None


def require_credential_free_url(value: str, field: str, *, area: str = "loopx") -> str:
    """``value`` unchanged, or ``invalid_argument`` (``details.reason``:
    ``url_with_credentials``, ``details.part``) — the message never echoes the URL."""
    part = url_credential_part(value)
    if part is not None:
        raise DomainError(
            "invalid_argument",
            f"{field} must not carry credentials (its {part} looks like one).",
            field=field,
            area=area,
            details={"reason": "url_with_credentials", "part": part},
        )
    return value
