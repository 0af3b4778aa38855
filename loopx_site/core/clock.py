"""The single clock of the project.

Services call ``clock.now()`` (never ``timezone.now()`` or ``datetime.now()``), so tests
can freeze or move time by patching this one function. Timestamps leave the system as
UTC ISO-8601 with a ``Z`` suffix.
"""

import datetime as dt
import re

from django.utils import timezone

_ISO_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$")
# RFC 3339 date-time: ``Z`` or a numeric offset (``+00:00``, LoopX's form), fraction ≤ µs.
_RFC3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,6})?(?:[Zz]|[+-]\d{2}:\d{2})$"
)


def now() -> dt.datetime:
    """Current time, timezone-aware UTC."""
    return timezone.now()


def iso(value: dt.datetime | None) -> str | None:
    """Render an aware datetime as ``YYYY-MM-DDTHH:MM:SS[.mmm]Z`` (UTC)."""
    if value is None:
        return None
    value = value.astimezone(dt.UTC)
    spec = "milliseconds" if value.microsecond else "seconds"
    return value.replace(tzinfo=None).isoformat(timespec=spec) + "Z"


def parse_iso_z(text: str) -> dt.datetime:
    """Parse a strict UTC ``…Z`` timestamp; raises ``ValueError`` for anything else.

    Accepts ``YYYY-MM-DDTHH:MM:SSZ`` with an optional fraction; rejects offsets, naive
    values and impossible calendar dates.
    """
    if not isinstance(text, str) or not _ISO_Z.fullmatch(text):
        raise ValueError("expected a UTC timestamp like 2026-12-01T00:00:00Z")
    return dt.datetime.fromisoformat(text[:-1]).replace(tzinfo=dt.UTC)


def parse_rfc3339(text: str) -> dt.datetime:
    """Parse an RFC 3339 timestamp with ``Z`` or a numeric offset (LoopX writes
    ``2026-07-16T00:30:00+00:00``) and return the same instant in UTC; raises
    ``ValueError`` for naive values, other layouts and impossible instants."""
    if not isinstance(text, str) or not _RFC3339.fullmatch(text):
        raise ValueError("expected an RFC 3339 timestamp like 2026-12-01T00:00:00Z")
    normal = text[:-1] + "+00:00" if text[-1] in "Zz" else text
    parsed = dt.datetime.fromisoformat(normal.replace("t", "T"))
    offset = parsed.utcoffset()
    if offset is None or abs(offset) >= dt.timedelta(hours=24):
        raise ValueError("expected an RFC 3339 timestamp like 2026-12-01T00:00:00Z")
    return parsed.astimezone(dt.UTC)
