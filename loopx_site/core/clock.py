"""The single clock of the project.

Services call ``clock.now()`` (never ``timezone.now()`` or ``datetime.now()``), so tests
can freeze or move time by patching this one function. Timestamps leave the system as
UTC ISO-8601 with a ``Z`` suffix.
"""

import datetime as dt
import re

from django.utils import timezone

_ISO_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$")


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
