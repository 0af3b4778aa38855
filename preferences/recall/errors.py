"""Error codes of the semantic preference recall hook (schema
``semantic_preference_error_v0``), declared in the core registry by ``CODES`` below.

Shared codes it raises come from ``loopx_site.core.errors.CODES``: ``invalid_argument``,
``config_invalid`` (the hook config breaks ``semantic_preference_hook_config_v0``),
``config_not_found`` (no readable config / none the caller may run — another Goal's looks
the same), ``config_not_ignored``, ``invalid_manifest`` and ``provider_failed`` (503: a
``fail_closed`` surface's provider failed; ``failure_kind`` beside the envelope).
"""

from pathlib import Path
from typing import Any

from loopx_site.core.errors import DomainError, declare_file

AREA = "semantic_preference"

CODES = declare_file("preferences.recall", Path(__file__).with_name("errors.toml"))


class SemanticPreferenceError(DomainError):
    area = AREA


def invalid(code: str, field: str | None, message: str, **details: Any) -> SemanticPreferenceError:
    return SemanticPreferenceError(code, message, field=field, details=details)
