"""Deletes that arrive: the provider side of closing a record.

Closing a record (retire, revoke, supersede, expiry, a revoked checkpoint, erasure) is
LoopX state first: recall filters the record out from that commit on. The copy an
external provider holds is removed through an outbox row, ``ProviderDeletion``:

1. ``enqueue`` — in the closing transaction, one row per record (``pending``); the
   first attempt runs at the commit (``on_commit``), and the closing services also make
   it right after their transaction (``attempt_record``; whichever comes second finds
   the row confirmed or not yet due);
2. ``attempt`` — under the row's lock: the provider's ``retire`` sent with the record's
   *own* identity binding (``binding_for``: the corpus scope and the actor peer the
   record was written with — OpenViking refuses a delete without the peer), then a
   readback by search (``verify``: the provider's recall for the record's own text on its
   surface no longer returns its resource ref, and an exact readback finds nothing or a
   non-recallable copy). Verified → ``confirmed``; otherwise the bounded failure kind is
   kept and the row is due again after an exponential backoff (``BACKOFF_BASE_SECONDS``
   doubling, at most ``BACKOFF_MAX_SECONDS``);
3. ``sweep`` — the background worker (``loopx.reward_memory.provider_deletions``, every
   60 s) attempts every due ``pending`` row, each claimed with ``SKIP LOCKED`` so N
   workers delete once; after ``MAX_ATTEMPTS`` a row is ``failed`` (the operator's
   ``retry`` puts it back to ``pending``).

Nothing a provider says is stored or logged beyond the bounded kind.
"""

import datetime as dt
import logging
from dataclasses import dataclass

from django.db import transaction

from loopx_site.core import clock
from loopx_site.core.background import claim
from reward_memory import providers, selectors
from reward_memory.domain import uris
from reward_memory.errors import RewardMemoryError
from reward_memory.models import MemoryRecord, ProviderDeletion
from reward_memory.principals import require_operator

logger = logging.getLogger("reward_memory")

BACKOFF_BASE_SECONDS = 30
BACKOFF_MAX_SECONDS = 6 * 3600
MAX_ATTEMPTS = 24  # ≈ 4 days of retries at the capped backoff
VERIFY_LIMIT = 50


def backoff(attempts: int) -> dt.timedelta:
    """The wait before attempt ``attempts + 1`` (``attempts`` ≥ 1 failed so far)."""
    seconds = BACKOFF_BASE_SECONDS * 2 ** max(0, attempts - 1)
    return dt.timedelta(seconds=min(seconds, BACKOFF_MAX_SECONDS))


def binding_for(record: MemoryRecord) -> providers.Binding:
    """The record's own identity binding: its corpus's scope and the actor peer its write
    used. A record written before the peer was kept falls back to the peer its own
    (server-written) resource ref lives under."""
    peer = record.provider_actor_peer_id or uris.peer_of(record.provider_resource_ref)
    return selectors.provider_binding(record.corpus, actor_peer_id=peer or None)


@dataclass(frozen=True)
class Outcome:
    state: str  # "confirmed" | "pending" | "failed" | "skipped"
    failure_kind: str = ""


def enqueue(record: MemoryRecord, *, reason: str, now: dt.datetime | None = None) -> None:
    """Queue the provider delete of a record just closed (call inside the closing
    transaction). Idempotent per record."""
    now = now or clock.now()
    row, created = ProviderDeletion.objects.get_or_create(
        record=record,
        defaults={
            "provider_id": record.provider_id,
            "reason": reason[:32],
            "next_attempt_at": now,
            "created_at": now,
            "updated_at": now,
        },
    )
    if created:
        # A close made inside a longer transaction (a superseded-on-activation record)
        # gets its first attempt at the commit; a service that closes and then calls
        # ``attempt_record`` finds the row done or not yet due here (skipped).
        # The record's text as it is now: an erasure scrubs it before this commit, and the
        # readback must search for what the provider holds, not for an empty string.
        text = record.summary
        transaction.on_commit(lambda: attempt(row.pk, query=text))


def attempt_record(record: MemoryRecord) -> Outcome:
    """The first attempt, made by the closing service after its transaction (a failure
    only leaves the row ``pending`` for the worker)."""
    pk = ProviderDeletion.objects.filter(record_id=record.pk).values_list("pk", flat=True).first()
    return Outcome("skipped") if pk is None else attempt(pk)


def verify(
    provider: providers.Provider, binding: providers.Binding, record, *, query: str | None = None
) -> bool:
    """The readback of a delete: the provider's search for the record's own text on its
    surface no longer returns it. ``query``: that text when the row no longer holds it (an
    erasure scrubs ``summary`` in the closing transaction; its first attempt gets the text
    in memory, never stored). With no text left (a later retry of an erased record) an
    empty search would prove nothing, so only an exact readback that finds nothing
    confirms."""
    text = query or record.summary
    if not text:
        return provider.readback(binding, record.provider_resource_ref) is None
    items = provider.recall(binding, surface=record.surface, query=text, limit=VERIFY_LIMIT)
    return all(item.resource_ref != record.provider_resource_ref for item in items)


def _delete_and_verify(record: MemoryRecord, query: str | None = None) -> str:
    """``""`` when the provider confirmed the delete, else the bounded failure kind."""
    try:
        provider = providers.get(record.provider_id)
        binding = binding_for(record)
        provider.retire(binding, record.provider_resource_ref)
        return "" if verify(provider, binding, record, query=query) else "still_found"
    except providers.ProviderUnavailable as exc:
        return exc.kind


def attempt(
    deletion_id: int, *, now: dt.datetime | None = None, query: str | None = None
) -> Outcome:
    """One attempt of one due ``pending`` row, holding its lock (a row another worker
    holds, or not due, is ``skipped``); ``query``: the record's text, see ``verify``."""
    now = now or clock.now()
    with transaction.atomic():
        row = (
            claim(ProviderDeletion.objects.filter(pk=deletion_id, state="pending"))
            .select_related("record__corpus")
            .first()
        )
        if row is None or row.next_attempt_at > now:
            return Outcome("skipped")
        kind = _delete_and_verify(row.record, query)
        row.attempts += 1
        row.updated_at = now
        if not kind:
            row.state, row.failure_kind, row.confirmed_at = "confirmed", "", now
        else:
            row.failure_kind = kind
            row.next_attempt_at = now + backoff(row.attempts)
            if row.attempts >= MAX_ATTEMPTS:
                row.state = "failed"
            logger.info("provider delete not confirmed: %s (attempt %d)", kind, row.attempts)
        row.save(
            update_fields=[
                "state",
                "attempts",
                "failure_kind",
                "next_attempt_at",
                "updated_at",
                "confirmed_at",
            ]
        )
    return Outcome(row.state, row.failure_kind)


def sweep(*, limit: int = 100, now: dt.datetime | None = None) -> dict[str, int]:
    """Attempt up to ``limit`` due ``pending`` deletes (oldest due first)."""
    now = now or clock.now()
    due = list(
        ProviderDeletion.objects.filter(state="pending", next_attempt_at__lte=now)
        .order_by("next_attempt_at", "pk")
        .values_list("pk", flat=True)[:limit]
    )
    counts = {"due": len(due), "confirmed": 0, "pending": 0, "failed": 0, "skipped": 0}
    for pk in due:
        counts[attempt(pk, now=now).state] += 1
    return counts


def retry(*, record_ref: str, operator, now: dt.datetime | None = None) -> ProviderDeletion:
    """Put a ``failed`` delete back to ``pending``, due now: an operator action (the account
    must hold ``reward_memory.change_providerdeletion``)."""
    require_operator(operator, "retry_provider_deletion")
    now = now or clock.now()
    row = ProviderDeletion.objects.filter(record__record_ref=record_ref).first()
    if row is None:
        raise RewardMemoryError(
            "provider_deletion_not_found",
            "No provider delete is queued for that record.",
            field="record_ref",
        )
    ProviderDeletion.objects.filter(pk=row.pk, state="failed").update(
        state="pending", attempts=0, next_attempt_at=now, updated_at=now
    )
    row.refresh_from_db()
    return row
