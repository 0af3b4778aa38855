"""Error codes of the semantic preference recall hook (schema
``semantic_preference_error_v0``), declared in the core registry by ``CODES`` below.

Shared codes it raises come from ``loopx_site.core.errors.CODES``: ``invalid_argument``,
``config_invalid`` (the hook config breaks ``semantic_preference_hook_config_v0``),
``config_not_found`` (no readable config / none the caller may run — another Goal's looks
the same), ``config_not_ignored``, ``invalid_manifest`` and ``provider_failed`` (503: a
``fail_closed`` surface's provider failed; ``failure_kind`` beside the envelope).
"""

from typing import Any

from loopx_site.core.errors import DomainError, declare

AREA = "semantic_preference"

CODES = declare(
    "preferences.recall",
    {
        "invalid_context": (400, "A --context entry is not lower_snake=value."),
        "unknown_surface": (400, "The surface is not configured."),
        "extension_not_found": (404, "No installed extension has this id."),
        "note_not_found": (404, "No such provider note."),
        "extension_installed": (409, "The id is installed with another manifest; upgrade it."),
        "extension_doctor_failed": (400, "The manifest doctor of the provider failed."),
        "no_rollback_revision": (400, "The extension has no previous revision."),
        "provider_ambiguous": (409, "Several active implementations and no selector."),
        "provider_unhealthy": (400, "The provider's index disagrees with its notes."),
    },
)


class SemanticPreferenceError(DomainError):
    area = AREA


def invalid(code: str, field: str | None, message: str, **details: Any) -> SemanticPreferenceError:
    return SemanticPreferenceError(code, message, field=field, details=details)
