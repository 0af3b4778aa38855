"""Error codes of the preferences app (area ``semantic_preference``).

| code | status | when |
|---|---|---|
| invalid_argument | 400 | a field fails validation (``field`` names it) |
| goal_not_registered / agent_not_registered | 404 | unknown Goal / Agent |
| revision_conflict | 409 | ``expected_revision`` is not the scope's current revision (also one |
|   |   | of another scope, or a foreign string: ``details.revision_origin``) |
| operation_conflict | 409 | an operation id reused with different arguments |
| not_found | 409 | retiring a key the scope does not hold |
| already_retired | 409 | retiring a key that is already retired |
| stale_source | 409 | re-remembering a retired key with a source ref its lineage used |
| capacity_exceeded | 413 | the current view would exceed 64 keys or 32 KiB |
| scope_not_empty | 409 | migrating into a scope that already has a journal |
| source_scope_not_found / source_scope_ambiguous | 404 / 409 | migrate-scope source |
| store_unavailable | 503 | the journal's stored rows cannot be read (status ``unavailable``) |

A conflict error raised by the journal carries the scope's current state in
``err.state``; ``preferences.documents`` puts it beside the envelope as ``current``.
"""

from typing import Any

from loopx_site.core.errors import DomainError

AREA = "semantic_preference"

STATUS = {
    "not_found": 409,
    "already_retired": 409,
    "stale_source": 409,
    "scope_not_empty": 409,
    "source_scope_not_found": 404,
    "source_scope_ambiguous": 409,
    "store_unavailable": 503,
}


class PreferenceError(DomainError):
    area = AREA

    def __init__(
        self,
        code: str,
        message: str,
        *,
        field: str | None = None,
        details: dict[str, Any] | None = None,
    ):
        super().__init__(code, message, field=field, details=details, status=STATUS.get(code))


def invalid(field: str, message: str) -> PreferenceError:
    return PreferenceError("invalid_argument", message, field=field)
