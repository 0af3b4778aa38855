"""Reward Memory's part of a Goal erasure (``loopx_site.core.erasure``).

A Goal's content here is what its Agents wrote or were given: ingest events and the
records they activated (with their candidates, reviews and operator controls), pending
ingests, recall and application receipts, and reflection candidates. Rows that carry
identity other rows or replays depend on (records, ingest events, receipts) stay as
tombstones holding only digests and ids; their text and JSON are replaced. A record's
copy at the built-in ``local`` provider (document, full-text postings, embedding) is
deleted in the same transaction; a record held by an external provider gets a provider
delete through the outbox (``services.provider_deletions``), retried until the provider
confirms. Corpora and their operator-reviewed records are not a Goal's content.
"""

from typing import Any

from loopx_site.core import clock
from loopx_site.core.canonical import digest_ref
from loopx_site.engines import fulltext
from reward_memory.models import (
    ApplicationReceipt,
    Candidate,
    IngestEvent,
    LocalProviderDocument,
    MemoryRecord,
    OperatorControl,
    PendingIngest,
    ProviderDeletion,
    RecallReceipt,
    ReflectionCandidate,
    Review,
)
from reward_memory.providers import hybrid
from reward_memory.providers.local import namespace
from reward_memory.services import provider_deletions
from reward_memory.services.records import close_for_erasure


def tombstone(value: Any) -> dict[str, Any]:
    """What stays of an erased JSON value: its digest."""
    return {"erased": True, "digest": digest_ref(value)}


def _scope(model, goal, agent):
    rows = model.objects.filter(goal=goal)
    return rows if agent is None else rows.filter(agent=agent)


def _drop_local_copy(record: MemoryRecord) -> int:
    binding = provider_deletions.binding_for(record)
    docs = LocalProviderDocument.objects.filter(
        scope_key=binding.scope_key, resource_ref=record.provider_resource_ref
    )
    for doc in docs:
        fulltext.remove(namespace(binding, doc.surface), doc.resource_ref)
        hybrid.bump(binding.scope_key, doc.surface)
    removed, _ = docs.delete()
    return removed


def _erase_records(records: list[MemoryRecord], counts: dict[str, int]) -> dict[str, int]:
    deletes: dict[str, int] = {}
    now = clock.now()
    for record in records:
        close_for_erasure(record, now=now)
        if record.provider_id == "local":
            counts["reward_memory.LocalProviderDocument"] += _drop_local_copy(record)
            continue
        provider_deletions.enqueue(record, reason="erasure", now=now)
        state = ProviderDeletion.objects.get(record=record).state
        deletes[state] = deletes.get(state, 0) + 1
    for record in records:
        record.refresh_from_db()
        record.summary = ""
        record.content = tombstone(record.content)
        record.save(update_fields=["summary", "content"])
    counts["reward_memory.MemoryRecord"] = len(records)
    controls = OperatorControl.objects.filter(record__in=records)
    counts["reward_memory.OperatorControl"] = _scrub(controls, "document")
    return deletes


def _scrub(rows, field: str, *, null: bool = False) -> int:
    count = 0
    for row in rows:
        setattr(row, field, None if null else tombstone(getattr(row, field)))
        row.save(update_fields=[field])
        count += 1
    return count


def _erase_candidates(records: list[MemoryRecord], counts: dict[str, int]) -> None:
    refs = {(r.corpus_id, r.candidate_ref) for r in records}
    candidates = [
        c
        for c in Candidate.objects.filter(candidate_ref__in=[ref for _, ref in refs])
        if (c.corpus_id, c.candidate_ref) in refs
    ]
    counts["reward_memory.Candidate"] = _scrub(candidates, "document", null=True)
    counts["reward_memory.Review"] = _scrub(
        Review.objects.filter(candidate__in=candidates), "document"
    )


def erase(*, goal, agent=None) -> dict[str, Any]:
    """Erase the Goal's (or the Agent's) Reward Memory content."""
    counts: dict[str, int] = {"reward_memory.LocalProviderDocument": 0}
    events = list(_scope(IngestEvent, goal, agent).select_for_update())
    record_ids = {e.record_id for e in events if e.record_id is not None}
    records = list(MemoryRecord.objects.select_for_update().filter(pk__in=record_ids))
    deletes = _erase_records(records, counts)
    _erase_candidates(records, counts)
    counts["reward_memory.PendingIngest"], _ = _scope(PendingIngest, goal, agent).delete()
    for event in events:
        event.event, event.receipt = tombstone(event.event), None
        event.save(update_fields=["event", "receipt"])
    counts["reward_memory.IngestEvent"] = len(events)
    recalls = _scope(RecallReceipt, goal, agent)
    counts["reward_memory.ApplicationReceipt"] = _scrub(
        ApplicationReceipt.objects.filter(recall__in=recalls), "receipt"
    )
    counts["reward_memory.RecallReceipt"] = recalls.count()
    for recall in recalls:
        recall.packet, recall.result_refs = tombstone(recall.packet), []
        recall.save(update_fields=["packet", "result_refs"])
    reflections = _scope(ReflectionCandidate, goal, agent)
    counts["reward_memory.ReflectionCandidate"] = _scrub(reflections, "reflection")
    reflections.update(evidence_refs=[], ingest_receipt=None)
    return {"removed": counts, "provider_deletes": deletes}
