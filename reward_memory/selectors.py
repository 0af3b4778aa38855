"""Reads and output shapes of Reward Memory (never write).

Public payloads never carry a provider scope ref, a resource ref, a query text or an
evidence quote: providers appear as ``provider_id`` + ``binding_ref`` (a digest).
"""

from typing import Any

from django.db.models import Count, Q

from loopx_site.core import clock
from loopx_site.core.canonical import digest_ref
from reward_memory import contracts as c
from reward_memory import guards, providers
from reward_memory.errors import RewardMemoryError
from reward_memory.models import (
    ApplicationReceipt,
    Corpus,
    IngestEvent,
    MemoryRecord,
    PendingIngest,
    RecallReceipt,
    StandingPolicy,
)


# -- corpora ------------------------------------------------------------------------------
def agent_key(goal_id: str, agent_id: str) -> str:
    return f"{goal_id}/{agent_id}"


def is_allowlisted(corpus: Corpus, goal_id: str, agent_id: str) -> bool:
    return agent_key(goal_id, agent_id) in (corpus.agent_allowlist or [])


def list_corpora(*, goal_id: str | None = None, agent_id: str | None = None) -> list[Corpus]:
    """All corpora (``goal_id=None``: operator), or those allowlisting the Goal/Agent."""
    corpora = list(Corpus.objects.prefetch_related("policies").order_by("corpus_id"))
    if goal_id is None:
        return corpora
    visible = []
    for corpus in corpora:
        keys = corpus.agent_allowlist or []
        if agent_id is not None:
            if agent_key(goal_id, agent_id) in keys:
                visible.append(corpus)
        elif any(k.split("/", 1)[0] == goal_id for k in keys):
            visible.append(corpus)
    return visible


def get_corpus(corpus_id: str) -> Corpus:
    corpus = Corpus.objects.filter(corpus_id=corpus_id).first()
    if corpus is None:
        raise RewardMemoryError(
            "corpus_not_found", "No corpus with that id is registered.", field="corpus_id"
        )
    return corpus


def corpus_binding(corpus: Corpus) -> guards.CorpusBinding:
    policy = corpus.freshness_policy or {}
    return guards.CorpusBinding(
        memory_class=corpus.memory_class,
        project=corpus.project,
        surfaces=tuple(corpus.surfaces or ()),
        max_source_age_days=policy.get("max_source_age_days"),
        require_current_revision=policy.get("require_current_revision", True),
    )


def provider_binding(corpus: Corpus, *, actor_peer_id: str | None = None) -> providers.Binding:
    return providers.Binding(
        provider_id=corpus.provider_id,
        scope_ref=corpus.provider_scope_ref,
        actor_peer_id=actor_peer_id,
    )


def active_policy(corpus: Corpus, surface: str) -> StandingPolicy | None:
    return StandingPolicy.objects.filter(corpus=corpus, surface=surface, active=True).first()


def policy_payload(policy: StandingPolicy) -> dict[str, Any]:
    return {
        "surface": policy.surface,
        "policy_digest": policy.policy_digest,
        "active": policy.active,
        "created_at": clock.iso(policy.created_at),
    }


def corpus_payload(corpus: Corpus) -> dict[str, Any]:
    """The public registry row of a corpus (``reward_memory_corpus_v0``)."""
    return {
        "schema_version": c.CORPUS_SCHEMA,
        "corpus_id": corpus.corpus_id,
        "memory_class": corpus.memory_class,
        "owner": corpus.owner,
        "reviewer": corpus.reviewer,
        "authority_source": corpus.authority_source,
        "maintenance": {"retirement_authority": corpus.retirement_authority},
        "project": corpus.project,
        "surfaces": list(corpus.surfaces or []),
        "freshness": dict(corpus.freshness_policy or {}),
        "privacy": dict(corpus.privacy or {}),
        "provider": {"provider_id": corpus.provider_id, "binding_ref": corpus.provider_binding_ref},
        "allowlisted_agents": len(corpus.agent_allowlist or []),
        "standing_policies": [
            policy_payload(p)
            for p in sorted(corpus.policies.all(), key=lambda p: (p.surface, p.created_at))
            if p.active
        ],
        "revision": corpus.revision,
        "active": corpus.active,
        "created_at": clock.iso(corpus.created_at),
        "updated_at": clock.iso(corpus.updated_at),
    }


def _state(value: bool, observed_at=None, **extra) -> dict[str, Any]:
    return {"value": bool(value), "observed_at": clock.iso(observed_at), **extra}


def corpus_health(corpus: Corpus) -> dict[str, Any]:
    """The five health states, each observed separately and never merged.

    ``index_present`` asks the provider's read-only preflight; the other four read
    LoopX's own receipts. Stateless: nothing is written, no provider write happens.
    """
    try:
        preflight = providers.get(corpus.provider_id).preflight(provider_binding(corpus))
        index = _state(preflight.index_present, failure_kind=preflight.failure_kind)
    except providers.ProviderUnavailable as exc:
        index = _state(False, failure_kind=exc.kind)
    last_query = (
        RecallReceipt.objects.filter(corpus=corpus, status__in=["ok", "empty"])
        .order_by("-created_at")
        .values_list("created_at", flat=True)
        .first()
    )
    last_readback = (
        MemoryRecord.objects.filter(corpus=corpus, readback_verified_at__isnull=False)
        .order_by("-readback_verified_at")
        .values_list("readback_verified_at", flat=True)
        .first()
    )
    last_applied = (
        ApplicationReceipt.objects.filter(corpus=corpus, status="applied")
        .order_by("-created_at")
        .values_list("created_at", flat=True)
        .first()
    )
    counts = dict(
        MemoryRecord.objects.filter(corpus=corpus)
        .values_list("lifecycle_state")
        .annotate(n=Count("id"))
        .values_list("lifecycle_state", "n")
    )
    return {
        "schema_version": c.CORPUS_HEALTH_SCHEMA,
        "corpus_id": corpus.corpus_id,
        "revision": corpus.revision,
        "health": {
            "corpus_present": _state(corpus.active, corpus.updated_at),
            "index_present": index,
            "retrieval_query_succeeded": _state(last_query is not None, last_query),
            "result_readback_verified": _state(last_readback is not None, last_readback),
            "memory_applied_with_receipt": _state(last_applied is not None, last_applied),
        },
        "records": {state: counts.get(state, 0) for state in c.LIFECYCLE_STATES},
    }


def health_summary(health: dict[str, Any]) -> str:
    """Compact one-line rendering for admin and text output (states stay separate)."""
    marks = []
    for key in c.HEALTH_STATES:
        label = key.split("_")[0] if key != "memory_applied_with_receipt" else "applied"
        if key == "result_readback_verified":
            label = "readback"
        elif key == "retrieval_query_succeeded":
            label = "query"
        marks.append(f"{label}:{'yes' if health['health'][key]['value'] else 'no'}")
    return " ".join(marks)


# -- records -------------------------------------------------------------------------------
def live_records(corpus: Corpus, *, now=None):
    now = now or clock.now()
    return MemoryRecord.objects.filter(corpus=corpus, lifecycle_state=c.ACTIVE).filter(
        Q(expires_at__isnull=True) | Q(expires_at__gt=now)
    )


def get_record(record_ref: str) -> MemoryRecord:
    record = MemoryRecord.objects.select_related("corpus").filter(record_ref=record_ref).first()
    if record is None:
        raise RewardMemoryError("record_not_found", "No such record.", field="record_ref")
    return record


def record_envelope(record: MemoryRecord) -> dict[str, Any]:
    """``reward_memory_active_record_v0``: the provider content plus current lifecycle.

    Private (it carries the summary); public projections use ``record_public``.
    """
    content = record.content or {}
    supersedes = list(record.supersedes.values_list("record_ref", flat=True))
    return {
        "schema_version": c.ACTIVE_RECORD_SCHEMA,
        "record_ref": record.record_ref,
        "corpus_id": record.corpus.corpus_id,
        "memory_class": record.memory_class,
        "candidate_ref": record.candidate_ref,
        "content_digest": record.content_digest,
        "summary": record.summary,
        "source": content.get("source"),
        "scope": content.get("scope"),
        "authority": content.get("authority"),
        "confidence": content.get("confidence"),
        "activation": content.get("activation"),
        "lifecycle_state": record.lifecycle_state,
        "supersession": {
            "supersedes": sorted(supersedes),
            "superseded_by": record.superseded_by.record_ref if record.superseded_by else None,
        },
        "revocation": record.revocation,
        "retirement": record.retirement,
        "expiry": {"expires_at": clock.iso(record.expires_at)},
        "privacy": content.get("privacy"),
        "readback_verified_at": clock.iso(record.readback_verified_at),
        "activated_at": clock.iso(record.activated_at),
    }


def record_public(record: MemoryRecord) -> dict[str, Any]:
    return {
        "memory_ref_digest": digest_ref(record.record_ref),
        "provider_ref_digest": record.provider_ref_digest,
        "memory_class": record.memory_class,
        "surface": record.surface,
        "lifecycle_state": record.lifecycle_state,
        "lineage": {
            "candidate_ref": record.candidate_ref,
            "activation_basis": record.activation_basis,
            "basis_ref": record.policy_digest
            or (record.review.review_id if record.review else None),
        },
    }


def soft_preference_documents(project: str) -> list[dict[str, Any]]:
    """Active, unexpired ``soft_preference`` records of ``project`` for the built-in
    semantic-preference provider: ``ref`` (opaque record ref), ``summary``, ``surfaces``."""
    now = clock.now()
    rows = (
        MemoryRecord.objects.filter(
            memory_class=c.SOFT_PREFERENCE, project=project, lifecycle_state=c.ACTIVE
        )
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .order_by("record_ref")
        .values_list("record_ref", "summary", "surface")
    )
    return [
        {"ref": ref, "summary": summary, "surfaces": [surface]} for ref, summary, surface in rows
    ]


# -- ingest ----------------------------------------------------------------------------------
def pending_ingests(goal_id: str, agent_id: str):
    return (
        PendingIngest.objects.select_related("event")
        .filter(goal__goal_id=goal_id, agent__agent_id=agent_id, resolved_at__isnull=True)
        .order_by("created_at", "pk")
    )


def ingest_event_row(goal_id: str, agent_id: str, event_ref: str) -> IngestEvent | None:
    return IngestEvent.objects.filter(
        agent__goal__goal_id=goal_id, agent__agent_id=agent_id, event_ref=event_ref
    ).first()


def get_recall(recall_id: str) -> RecallReceipt:
    recall = (
        RecallReceipt.objects.select_related("corpus", "goal", "agent")
        .filter(recall_id=recall_id)
        .first()
    )
    if recall is None:
        raise RewardMemoryError("recall_not_found", "No such recall.", field="recall_id")
    return recall
