"""Error codes of the preferences journal (area ``semantic_preference``), declared in the
core registry by ``CODES`` below; ``preferences.md`` pins them.

Shared codes it raises come from ``loopx_site.core.errors.CODES``: ``invalid_argument``
(``field`` names it), ``goal_not_registered`` / ``agent_not_registered`` (404),
``revision_conflict`` (409: ``expected_revision`` is not the scope's current revision —
also one of another scope, or a foreign string: ``details.revision_origin``),
``operation_conflict`` (409), ``capacity_exceeded`` (413: the current view would exceed 64
keys or 32 KiB) and ``store_unavailable`` (503: the journal's stored rows cannot be read;
status ``unavailable``).

A conflict error raised by the journal carries the scope's current state in
``err.state``; ``preferences.documents`` puts it beside the envelope as ``current``.
"""

from pathlib import Path

from loopx_site.core.errors import DomainError, declare_file

AREA = "semantic_preference"

CODES = declare_file("preferences", Path(__file__).with_name("errors.toml"))


class PreferenceError(DomainError):
    area = AREA


def invalid(field: str, message: str) -> PreferenceError:
    return PreferenceError("invalid_argument", message, field=field)
