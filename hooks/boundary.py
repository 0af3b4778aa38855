"""The public-safety boundary of hook inputs and intent payloads.

A value crosses the boundary only when it can be *proven* compact and opaque: every
string is a short token from a narrow alphabet (no spaces, so no prose, logs or
transcripts), is not an absolute or home-relative path, not a URL, not a secret-shaped
string and not an e-mail address; nesting, list lengths and total size are bounded.
Anything else is refused — the caller records ``input_boundary_rejected`` (input) or
``result_contract_rejected`` (result); the reason names the field and the rule, never the
value.
"""

import functools
import math
import re
from typing import Any

from loopx_site.core.canonical import canonical_size
from loopx_site.core.validation import credential_like_segment

TOKEN_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@+=/-]{0,191}$")
KEY_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")

_DENY_RULES = (
    ("url", r"://"),
    ("path", r"//|(?:^|/)\.|\.\.|[:=@+]/|^[A-Za-z]:[\\/]"),
    ("path", r"^(?:home|Users|root|etc|var|tmp|private|mnt|opt|usr|srv|proc|dev)(?:/|$)"),
    ("email", r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}"),
    (
        "credential",
        r"(?i:password|passwd|secret|api[_-]?key|bearer|credential|private[_-]?key)[=:]"
        r"|lxh_[A-Za-z0-9_-]{12,}|sk-[A-Za-z0-9]{16,}|gh[pousr]_[A-Za-z0-9]{20,}"
        r"|github_pat_|AKIA[0-9A-Z]{16}|xox[abprs]-[A-Za-z0-9-]{10,}|-----BEGIN"
        r"|[^:@/]+:[^:@/]+@",  # user:password@host
    ),
)
# One pass per string: every rule is a named alternative of a single pattern.


@functools.cache
def _deny() -> re.Pattern[str]:
    """The deny rules as one pattern, compiled on first use: every process that loads
    the hooks app imports this module (its models name the event kinds), few check a
    token, and the compile is the costliest step of the import."""
    return re.compile(
        "|".join(f"(?P<{rule}{i}>{pattern})" for i, (rule, pattern) in enumerate(_DENY_RULES))
    )


MAX_DEPTH = 6
MAX_LIST = 32
MAX_BYTES = 16384
MAX_INT = 2**53


@functools.lru_cache(maxsize=4096)
def token_violation(text: str) -> str | None:
    """The rule a string breaks, or ``None`` when it is a public-safe opaque token."""
    if not TOKEN_RE.fullmatch(text):
        return "not_opaque_token"
    found = _deny().search(text)
    if found:
        return found.lastgroup.rstrip("0123456789")
    if "/" in text and credential_like_segment(text):  # the core URL rule's path half
        return "credential"
    return None


def is_public_token(text: Any) -> bool:
    return isinstance(text, str) and token_violation(text) is None


def violations(value: Any, *, path: str = "$", max_bytes: int = MAX_BYTES) -> list[str]:
    """Every ``<field path>:<rule>`` the value breaks (empty list = public-safe)."""
    found: list[str] = []
    _walk(value, path, 0, found)
    if not found:
        try:
            if canonical_size(value) > max_bytes:
                found.append(f"{path}:too_large")
        except (TypeError, ValueError):
            found.append(f"{path}:not_json")
    return found


def _walk(value: Any, path: str, depth: int, found: list[str]) -> None:
    if len(found) >= 8:
        return
    if depth > MAX_DEPTH:
        found.append(f"{path}:too_deep")
        return
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, int):
        if abs(value) > MAX_INT:
            found.append(f"{path}:integer_out_of_range")
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            found.append(f"{path}:not_finite")
        return
    if isinstance(value, str):
        rule = token_violation(value)
        if rule:
            found.append(f"{path}:{rule}")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str) or not KEY_RE.fullmatch(key):
                found.append(f"{path}:bad_key")
                continue
            _walk(item, f"{path}.{key}", depth + 1, found)
        return
    if isinstance(value, list):
        if len(value) > MAX_LIST:
            found.append(f"{path}:list_too_long")
            return
        for index, item in enumerate(value):
            _walk(item, f"{path}[{index}]", depth + 1, found)
        return
    found.append(f"{path}:unsupported_type")
