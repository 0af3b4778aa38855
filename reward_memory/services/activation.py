"""The one write path of a record: active envelope → provider sync → function-boundary
recall → triple readback → activation. Used by the ingest loop (standing-policy basis)
and by applying an accepted review (review basis); both are idempotent.

Only the corpus's declared owner persists: the envelope's writer is ``corpus.owner``.
"""

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction

from loopx_site.core import clock
from loopx_site.core.canonical import canonical_bytes, digest_ref, prefixed_id, sha256_hex
from reward_memory import contracts as c
from reward_memory import providers, selectors
from reward_memory.domain import guards, uris
from reward_memory.models import AuthorityCheckpoint, Corpus, MemoryRecord, Review
from reward_memory.services import records

READBACK_RECALL_LIMIT = 20


@dataclass
class ActivationPlan:
    corpus: Corpus
    candidate: dict[str, Any]
    candidate_ref: str
    basis: str  # "standing_policy" | "review"
    basis_ref: str  # policy digest | review id
    observed_at: dt.datetime
    expires_at: dt.datetime | None
    review: Review | None = None
    actor_peer_id: str | None = None  # from the configured binding, never a URI
    # the server record binding the source actor to its role (``guards.source_binding``)
    source_binding: Any = None
    record_ref: str = ""
    resource_ref: str = ""
    content: dict[str, Any] = field(default_factory=dict)
    content_bytes: bytes = b""
    content_digest: str = ""

    @property
    def binding(self) -> providers.Binding:
        return selectors.provider_binding(self.corpus, actor_peer_id=self.actor_peer_id)

    @property
    def checkpoint_id(self) -> str | None:
        if self.candidate["target_class"] != c.HARD_POLICY:
            return None
        return guards.checkpoint_ref_of(self.candidate)

    @property
    def surface(self) -> str:
        return self.candidate["scope"]["surface"]

    @property
    def prior_candidate_ref(self) -> str | None:
        return (self.candidate.get("lineage") or {}).get("prior_candidate_ref")


def record_ref_for(corpus_id: str, candidate_ref: str, basis_ref: str) -> str:
    """Deterministic record identity; binds the corpus, candidate and activation basis."""
    return prefixed_id(
        "rmr_", {"corpus_id": corpus_id, "candidate_ref": candidate_ref, "basis_ref": basis_ref}
    )


def target_key(candidate_ref: str, basis_ref: str) -> str:
    """The provider target binds both the standing-policy (or review) and candidate digests,
    so a policy re-version never reuses an old activation."""
    return sha256_hex({"basis_ref": basis_ref, "candidate_ref": candidate_ref})[:40]


def build_plan(plan: ActivationPlan) -> ActivationPlan:
    """Fill in record ref, provider target and the immutable provider content."""
    corpus = plan.corpus
    plan.record_ref = record_ref_for(corpus.corpus_id, plan.candidate_ref, plan.basis_ref)
    provider_id = corpus.provider_id
    try:
        provider = providers.get(provider_id)
        plan.resource_ref = provider.resource_ref(
            plan.binding, surface=plan.surface, key=target_key(plan.candidate_ref, plan.basis_ref)
        )
    except providers.ProviderUnavailable:
        plan.resource_ref = providers.Provider().resource_ref(
            plan.binding, surface=plan.surface, key=target_key(plan.candidate_ref, plan.basis_ref)
        )
    content = c.provider_content(plan)
    plan.content = content
    plan.content_bytes = canonical_bytes(content)
    plan.content_digest = digest_ref(content)
    return plan


@dataclass
class ActivationOutcome:
    status: str
    record: MemoryRecord | None
    readback: dict[str, bool] | None = None
    deduplicated: bool = False
    provider_calls: int = 0
    failure_kind: str | None = None
    guard_reason: str | None = None  # status guard_blocked: the backstop reason code


class _Counting:
    """Counts calls made to a provider (telemetry for receipts; never its payloads)."""

    def __init__(self, provider: providers.Provider):
        self.provider = provider
        self.calls = 0

    def __getattr__(self, name):
        attr = getattr(self.provider, name)
        if name in ("write", "recall", "readback", "retire", "preflight", "canary"):

            def counted(*args, **kwargs):
                self.calls += 1
                return attr(*args, **kwargs)

            return counted
        return attr


def ensure_pending_record(plan: ActivationPlan, *, now: dt.datetime) -> MemoryRecord:
    """Create the pending record (idempotent on ``record_ref``)."""
    existing = MemoryRecord.objects.filter(record_ref=plan.record_ref).first()
    if existing is not None:
        return existing
    candidate = plan.candidate
    try:
        with transaction.atomic():
            record = MemoryRecord.objects.create(
                record_ref=plan.record_ref,
                corpus=plan.corpus,
                candidate_ref=plan.candidate_ref,
                memory_class=candidate["target_class"],
                project=candidate["scope"]["project"],
                surface=plan.surface,
                summary=candidate["content_summary"],
                content=plan.content,
                content_digest=plan.content_digest,
                activation_basis=plan.basis,
                policy_digest=plan.basis_ref if plan.basis == "standing_policy" else "",
                review=plan.review,
                writer=plan.corpus.owner,
                source_kind=candidate["source"]["kind"],
                source_actor=plan.content["source"]["actor"],
                observed_at=plan.observed_at,
                confidence_level=candidate["confidence"]["level"],
                authority=plan.content["authority"],
                authority_checkpoint=(
                    AuthorityCheckpoint.objects.filter(checkpoint_id=plan.checkpoint_id).first()
                    if plan.checkpoint_id
                    else None
                ),
                lifecycle_state=c.PENDING,
                expires_at=plan.expires_at,
                provider_id=plan.corpus.provider_id,
                provider_resource_ref=plan.resource_ref,
                provider_ref_digest=digest_ref(plan.resource_ref),
                provider_actor_peer_id=plan.actor_peer_id or "",
                created_at=now,
                state_changed_at=now,
            )
            records.journal_creation(record, actor=plan.corpus.owner, now=now)
    except IntegrityError:  # created concurrently by an identical activation
        record = MemoryRecord.objects.get(record_ref=plan.record_ref)
    return record


def sync_and_verify(plan: ActivationPlan) -> ActivationOutcome:
    """Provider sync → function-boundary recall → triple readback → activation.

    Never raises for provider conditions: ``provider_unavailable``, ``commit_pending``
    and ``readback_mismatch`` leave the record pending (not recallable) for a retry
    with the same plan (same ``observed_at`` ⇒ same bytes ⇒ provider-side dedupe).
    """
    now = clock.now()
    blocked = backstop(plan, now)
    if blocked is not None:
        return ActivationOutcome(c.GUARD_BLOCKED, None, guard_reason=blocked)
    existing = selectors.live_records(plan.corpus, now=now).filter(candidate_ref=plan.candidate_ref)
    same = existing.filter(record_ref=plan.record_ref).first()
    if same is not None:
        return ActivationOutcome(c.INGEST_ACTIVATED, same, verified(), deduplicated=True)
    record = ensure_pending_record(plan, now=now)
    if record.lifecycle_state == c.ACTIVE:
        return ActivationOutcome(c.INGEST_ACTIVATED, record, verified(), deduplicated=True)
    if record.lifecycle_state != c.PENDING:
        return ActivationOutcome("record_closed", record)
    try:
        provider = _Counting(providers.get(plan.corpus.provider_id))
    except providers.ProviderUnavailable as exc:
        return ActivationOutcome(c.INGEST_PROVIDER_UNAVAILABLE, record, failure_kind=exc.kind)
    binding = plan.binding
    try:
        written = provider.write(
            binding,
            providers.ProviderWrite(
                resource_ref=plan.resource_ref,
                surface=plan.surface,
                content=plan.content_bytes,
                search_text=plan.candidate["content_summary"],
            ),
        )
        if written.status != "committed" or written.resource_ref != plan.resource_ref:
            return ActivationOutcome(c.INGEST_COMMIT_PENDING, record, provider_calls=provider.calls)
        hits = provider.recall(
            binding,
            surface=plan.surface,
            query=plan.candidate["content_summary"],
            limit=READBACK_RECALL_LIMIT,
        )
        readback = provider.readback(binding, plan.resource_ref)
    except providers.ProviderUnavailable as exc:
        return ActivationOutcome(
            c.INGEST_PROVIDER_UNAVAILABLE,
            record,
            provider_calls=provider.calls,
            failure_kind=exc.kind,
        )
    checks = _triple_readback(plan, hits, readback)
    if not all(checks.values()):
        return ActivationOutcome(
            c.INGEST_READBACK_MISMATCH, record, checks, provider_calls=provider.calls
        )
    try:
        with transaction.atomic():
            record = records.activate(
                record,
                actor=plan.corpus.owner,
                now=clock.now(),
                prior_candidate_ref=plan.prior_candidate_ref,
            )
    except IntegrityError:  # another basis of the same candidate activated concurrently
        return ActivationOutcome(
            c.INGEST_COMMIT_PENDING, record, checks, provider_calls=provider.calls
        )
    return ActivationOutcome(c.INGEST_ACTIVATED, record, checks, provider_calls=provider.calls)


def backstop(plan: ActivationPlan, now) -> str | None:
    """Checks repeated right before any provider call, whatever path got here: a closed
    lineage, a hard_policy without a live operator checkpoint, a source actor/role no
    server record binds (``source_binding``), a URI peer that is not the configured
    peer."""
    if selectors.open_closure(plan.corpus, plan.candidate, plan.candidate_ref) is not None:
        return "lineage_closed"
    if plan.candidate["target_class"] == c.HARD_POLICY:
        facts = selectors.checkpoint_facts(plan.checkpoint_id or "", now=now)
        if facts is None or not facts.live:
            return "checkpoint_unverified"
    if plan.source_binding is None:
        return "actor_role_unverified"
    if not uris.peer_matches(plan.resource_ref, plan.actor_peer_id):
        return "actor_peer_mismatch"
    return None


def verified() -> dict[str, bool]:
    return {"resource_ref": True, "candidate_ref": True, "content_digest": True}


def _triple_readback(plan: ActivationPlan, hits, readback: bytes | None) -> dict[str, bool]:
    """resource ref (the recall found our target), candidate ref (the bytes name our
    candidate) and canonical content digest (the bytes are exactly ours)."""
    resource_ok = any(item.resource_ref == plan.resource_ref for item in hits)
    candidate_ok = False
    if readback is not None:
        try:
            parsed = json.loads(readback.decode("utf-8"))
            candidate_ok = isinstance(parsed, dict) and parsed.get("candidate_ref") == (
                plan.candidate_ref
            )
        except (UnicodeDecodeError, ValueError):
            candidate_ok = False
    digest_ok = (
        readback is not None
        and "sha256:" + hashlib.sha256(readback).hexdigest() == plan.content_digest
    )
    return {"resource_ref": resource_ok, "candidate_ref": candidate_ok, "content_digest": digest_ok}
