"""Error codes of the semantic preference recall hook (schema ``semantic_preference_error_v0``).

=====================  ======  ==========================================================
code                   HTTP    meaning
=====================  ======  ==========================================================
invalid_argument       400     a field of a command/API request has a bad shape
invalid_config         400     the hook config breaks ``semantic_preference_hook_config_v0``
config_not_found       404     no readable config file / no registered config of that name
                               that the caller may run (another Goal's looks the same)
config_not_ignored     400     the config file sits in a git work tree and git tracks it
                               or does not ignore it
invalid_context        400     a ``--context`` entry is not ``lower_snake=value``
unknown_surface        400     the surface is not configured
invalid_manifest       400     a provider extension manifest is malformed
not_found              404     no installed extension with that id
extension_installed    409     ``install`` of an id installed with another manifest (use
                               ``upgrade``)
extension_doctor_failed 400    the manifest doctor of an external provider failed; the
                               install/upgrade/enable/rollback was refused
no_rollback_revision   400     ``rollback`` of an extension without a previous revision
provider_ambiguous     409     several active implementations and no selector
provider_failed        503     a ``fail_closed`` surface's provider failed (``failure_kind``
                               beside the envelope and in ``details``)
=====================  ======  ==========================================================
"""

from typing import Any

from loopx_site.core.errors import DomainError

AREA = "semantic_preference"

STATUS = {
    "invalid_argument": 400,
    "invalid_config": 400,
    "config_not_found": 404,
    "config_not_ignored": 400,
    "invalid_context": 400,
    "unknown_surface": 400,
    "invalid_manifest": 400,
    "not_found": 404,
    "extension_installed": 409,
    "extension_doctor_failed": 400,
    "no_rollback_revision": 400,
    "provider_ambiguous": 409,
    "provider_failed": 503,
}


class SemanticPreferenceError(DomainError):
    area = AREA

    def __init__(self, code: str, message: str, **kwargs: Any):
        kwargs.setdefault("status", STATUS.get(code))
        super().__init__(code, message, **kwargs)


def invalid(code: str, field: str | None, message: str, **details: Any) -> SemanticPreferenceError:
    return SemanticPreferenceError(code, message, field=field, details=details)
