"""The preference journal's part of a Goal erasure (``loopx_site.core.erasure``).

Current subjects are deleted. Journal entries stay as tombstones: their sequence,
revisions, operation ids and intent hashes are kept (so a replayed operation id answers as
a conflict and never writes again, and no revision is reused), while the statement, the
source, the key and the receipt are replaced by digests. The scope keeps its revision.
"""

from typing import Any

from loopx_site.core.canonical import sha256_text
from preferences.models import PreferenceOperation, PreferenceScope, PreferenceSubject

#: The receipt of an erased journal entry (``services.journal`` refuses its replay).
ERASED_RECEIPT_KEY = "erased"


def _tombstone(operation: PreferenceOperation) -> None:
    operation.key = "erased:" + sha256_text(operation.key)[:32]
    operation.statement = None if operation.statement is None else ""
    operation.source_ref = "erased"
    operation.source_quote = ""
    operation.receipt = {ERASED_RECEIPT_KEY: True, "intent_hash": operation.intent_hash}
    operation.save(update_fields=["key", "statement", "source_ref", "source_quote", "receipt"])


def erase(*, goal, agent=None) -> dict[str, Any]:
    """Erase the Goal's (or the Agent's) preference statements and their history."""
    scopes = PreferenceScope.objects.filter(goal=goal)
    if agent is not None:
        scopes = scopes.filter(agent=agent)
    scope_ids = list(scopes.select_for_update().values_list("pk", flat=True))
    subjects, _ = PreferenceSubject.objects.filter(scope_id__in=scope_ids).delete()
    operations = 0
    for operation in PreferenceOperation.objects.filter(scope_id__in=scope_ids).exclude(
        source_ref="erased"
    ):
        _tombstone(operation)
        operations += 1
    PreferenceScope.objects.filter(pk__in=scope_ids).update(subject_count=0, used_bytes=0)
    return {
        "removed": {
            "preferences.PreferenceSubject": subjects,
            "preferences.PreferenceOperation": operations,
        }
    }
