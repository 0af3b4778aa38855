"""Candidate lineages: a decided lineage is closed once (retire, revoke, refute, reject)
and stays closed until an operator reopens it (``services.authority.reopen_lineage``).

Used by the record lifecycle (``services.records``) and the review (``services.review``);
it imports neither, so both depend on it one way.
"""

import datetime as dt
from typing import Any

from loopx_site.core.rows import insert_once
from reward_memory.domain import candidates
from reward_memory.models import (
    Corpus,
    IngestEvent,
    LineageClosure,
    MemoryRecord,
    RecordEvidence,
    Review,
)


def close_lineage(
    *,
    corpus: Corpus,
    candidate: dict[str, Any] | None,
    candidate_ref: str,
    reason: str,
    actor: str,
    reference: str = "",
    now: dt.datetime,
    digest: str = "",
) -> None:
    """Close a candidate's lineage (idempotent). Call inside the deciding transaction.
    ``digest`` (the content identity) is taken from ``candidate`` unless given."""
    if LineageClosure.objects.filter(
        corpus=corpus, candidate_ref=candidate_ref, reopened_at__isnull=True
    ).exists():
        return
    digest = digest or candidates.lineage_digest(candidate or {})
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


def add_evidence(
    *,
    record: MemoryRecord,
    candidate: dict[str, Any],
    candidate_ref: str,
    review: Review | None = None,
    event: IngestEvent | None = None,
    similarity: float | None,
    actor: str,
    now: dt.datetime,
) -> RecordEvidence:
    """Add a duplicate candidate's evidence to ``record``'s lineage (idempotent on the
    record and candidate): the restatement — accepted at ``review``, or arriving by
    standing-policy ingest as ``event`` — joins the record instead of becoming a second
    active record. Call inside the deciding transaction."""
    existing = RecordEvidence.objects.filter(record=record, candidate_ref=candidate_ref).first()
    if existing is not None:
        return existing
    insert_once(
        RecordEvidence,
        record=record,
        candidate_ref=candidate_ref,
        evidence_ref=str((candidate.get("source") or {}).get("evidence_ref") or "")[:256],
        review=review,
        event=event,
        lineage_digest=candidates.lineage_digest(candidate),
        similarity=similarity,
        added_by=actor,
        added_at=now,
    )
    return RecordEvidence.objects.get(record=record, candidate_ref=candidate_ref)


def close_evidence_lineages(
    *, record: MemoryRecord, reason: str, actor: str, reference: str, now: dt.datetime
) -> None:
    """Close the lineages of the duplicates whose evidence joined ``record`` with its
    own: what is retired, revoked or refuted does not come back as its restatement."""
    for evidence in record.evidence.select_related("review__candidate"):
        close_lineage(
            corpus=record.corpus,
            candidate=evidence.review.candidate.document if evidence.review else None,
            candidate_ref=evidence.candidate_ref,
            reason=reason,
            actor=actor,
            reference=reference,
            now=now,
            digest=evidence.lineage_digest,
        )
