"""Candidate lineages: a decided lineage is closed once (retire, revoke, refute, reject)
and stays closed until an operator reopens it (``services.authority.reopen_lineage``).

Used by the record lifecycle (``services.records``) and the review (``services.review``);
it imports neither, so both depend on it one way.
"""

import datetime as dt
from typing import Any

from loopx_site.core.rows import insert_once
from reward_memory.domain import candidates
from reward_memory.models import Corpus, LineageClosure


def close_lineage(
    *,
    corpus: Corpus,
    candidate: dict[str, Any] | None,
    candidate_ref: str,
    reason: str,
    actor: str,
    reference: str = "",
    now: dt.datetime,
) -> None:
    """Close a candidate's lineage (idempotent). Call inside the deciding transaction."""
    if LineageClosure.objects.filter(
        corpus=corpus, candidate_ref=candidate_ref, reopened_at__isnull=True
    ).exists():
        return
    digest = candidates.lineage_digest(candidate or {})
    # closed concurrently by the same decision: that closure stands
    insert_once(
        LineageClosure,
        corpus=corpus,
        candidate_ref=candidate_ref,
        content_digest=digest,
        reason=reason,
        reference=reference[:128],
        closed_by=actor,
        closed_at=now,
    )
