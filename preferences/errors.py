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

from loopx_site.core.errors import DomainError, declare

AREA = "semantic_preference"

CODES = declare(
    "preferences",
    {
        "not_found": (409, "The scope holds no such key."),
        "already_retired": (409, "The key is already retired."),
        "stale_source": (409, "That source ref was already used by this key's lineage."),
        "scope_not_empty": (409, "The target scope already has a journal."),
        "source_scope_not_found": (404, "No earlier scope matches."),
        "source_scope_ambiguous": (409, "Several earlier scopes match; name one."),
        # A cursor this history never issued: the caller's to fix (400), and LoopX's
        # `unavailable` (no page can be read from it).
        "cursor_unavailable": (400, "No history page can be read from this cursor.", "unavailable"),
    },
)


class PreferenceError(DomainError):
    area = AREA


def invalid(field: str, message: str) -> PreferenceError:
    return PreferenceError("invalid_argument", message, field=field)
