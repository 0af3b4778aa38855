"""Reads and output shapes of Reward Memory (never write).

Public payloads never carry a provider scope ref, a resource ref, a query text or an
evidence quote: providers appear as ``provider_id`` + ``binding_ref`` (a digest).
"""

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q

from loopx_site.core import clock
from loopx_site.core.canonical import digest_ref
from reward_memory import authority, guards, providers, uris
from reward_memory import contracts as c
from reward_memory.errors import RewardMemoryError
from reward_memory.models import (
    ApplicationReceipt,
    AuthorityCheckpoint,
    Corpus,
    CorpusRoleBinding,
    IngestEvent,
    LineageClosure,
    MemoryRecord,
    PendingIngest,
    RecallReceipt,
    StandingPolicy,
)
from reward_memory.principals import Principal

CORPUS_NOT_FOUND = "No corpus with that id is registered."


# -- corpora ------------------------------------------------------------------------------
def agent_key(goal_id: str, agent_id: str) -> str:
    return f"{goal_id}/{agent_id}"


def is_allowlisted(corpus: Corpus, goal_id: str, agent_id: str) -> bool:
    return agent_key(goal_id, agent_id) in (corpus.agent_allowlist or [])


# -- the privacy selector: what a (Goal, Agent) may read ----------------------------------
def goal_allowlisted(corpus: Corpus, goal_id: str) -> bool:
    return any(k.split("/", 1)[0] == goal_id for k in corpus.agent_allowlist or [])


def may_read_corpus(corpus: Corpus, goal_id: str, agent_id: str | None) -> bool:
    """The one rule for reading a corpus from a Goal/Agent scope.

    The Goal must be allowlisted (some ``goal/agent`` entry of it). ``private`` corpora
    further need the exact (Goal, Agent) pair; ``goal`` and ``project`` visibility admit
    every Agent of an allowlisted Goal. Another Goal never reads it. ``agent_id=None``
    (a Goal-wide host token) reads only non-private corpora of its Goal.
    """
    keys = corpus.agent_allowlist or []
    if not goal_allowlisted(corpus, goal_id):
        return False
    visibility = (corpus.privacy or {}).get("visibility", "private")
    if visibility == "private":
        return agent_id is not None and agent_key(goal_id, agent_id) in keys
    return True


def list_corpora(*, goal_id: str | None = None, agent_id: str | None = None) -> list[Corpus]:
    """All corpora (``goal_id=None``: operator), or those the Goal/Agent may read."""
    corpora = list(Corpus.objects.prefetch_related("policies").order_by("corpus_id"))
    if goal_id is None:
        return corpora
    return [corpus for corpus in corpora if may_read_corpus(corpus, goal_id, agent_id)]


def get_corpus(corpus_id: str, *, viewer: tuple[str, str | None] | None = None) -> Corpus:
    """The corpus, as seen by ``viewer`` (``(goal_id, agent_id)``; ``None``: operator).
    A corpus the viewer may not read is reported exactly like a missing one."""
    corpus = Corpus.objects.filter(corpus_id=corpus_id).first()
    if corpus is None or (viewer is not None and not may_read_corpus(corpus, *viewer)):
        raise RewardMemoryError("corpus_not_found", CORPUS_NOT_FOUND, field="corpus_id")
    return corpus


def readable_records(
    *,
    goal_id: str | None,
    agent_id: str | None,
    memory_class: str | None = None,
    project: str | None = None,
    corpus: Corpus | None = None,
    surface: str | None = None,
    now=None,
):
    """Records a (Goal, Agent) may read: corpus active and readable by it
    (``may_read_corpus``), record active and unexpired with a verified exact readback,
    and — for hard_policy — derived from a live operator checkpoint. No Goal → nothing."""
    if not goal_id:
        return MemoryRecord.objects.none()
    now = now or clock.now()
    corpora = Corpus.objects.filter(active=True)
    if corpus is not None:
        corpora = corpora.filter(pk=corpus.pk)
    if project is not None:
        corpora = corpora.filter(project=project)
    allowed = [c_.pk for c_ in corpora if may_read_corpus(c_, goal_id, agent_id)]
    rows = MemoryRecord.objects.filter(
        corpus_id__in=allowed, lifecycle_state=c.ACTIVE, readback_verified_at__isnull=False
    ).filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
    if memory_class is not None:
        rows = rows.filter(memory_class=memory_class)
    if project is not None:
        rows = rows.filter(project=project)
    if surface is not None:
        rows = rows.filter(surface=surface)
    return rows.exclude(
        Q(memory_class=c.HARD_POLICY)
        & (
            Q(authority_checkpoint__isnull=True)
            | Q(authority_checkpoint__revoked_at__isnull=False)
            | Q(authority_checkpoint__expires_at__lte=now)
        )
    )


#: Why a stored answer's record no longer passes ``readable_records`` (replays count them):
#: its lifecycle state, ``expired`` (active past ``expires_at``), ``authority_not_live``
#: (a hard_policy whose checkpoint was revoked or expired), ``not_readable`` (the corpus
#: is inactive or no longer readable by the caller, or the record is not read back) and
#: ``missing`` (no such record).
REPLAY_DROP_REASONS = (
    c.RETIRED,
    c.REVOKED,
    c.SUPERSEDED,
    c.EXPIRED,
    c.REFUTED,
    c.QUARANTINED,
    c.STALE,
    "authority_not_live",
    "not_readable",
    "missing",
)


def _drop_reason(record: MemoryRecord | None, now) -> str:
    if record is None:
        return "missing"
    state = record.lifecycle_state
    if state != c.ACTIVE:
        return state if state in REPLAY_DROP_REASONS else "not_readable"
    if record.expires_at is not None and record.expires_at <= now:
        return c.EXPIRED
    if record.memory_class == c.HARD_POLICY:
        checkpoint = record.authority_checkpoint
        if (
            checkpoint is None
            or checkpoint.revoked_at is not None
            or (checkpoint.expires_at is not None and checkpoint.expires_at <= now)
        ):
            return "authority_not_live"
    return "not_readable"


def replay_dropped(counts: dict[str, int] | None = None) -> dict[str, Any]:
    """The ``replay_dropped`` field: ``{"count": n, "by_reason": {reason: n, …}}``
    (every reason of ``REPLAY_DROP_REASONS``, zeros included)."""
    by_reason = {reason: int((counts or {}).get(reason, 0)) for reason in REPLAY_DROP_REASONS}
    return {"count": sum(by_reason.values()), "by_reason": by_reason}


def replay_readable(
    record_refs,
    *,
    goal_id: str | None,
    agent_id: str | None,
    corpus: Corpus | None = None,
    now=None,
) -> tuple[list[str], dict[str, Any]]:
    """The one filter every replay applies to the records of a stored answer.

    Returns the refs (in their stored order) that a fresh read would still return —
    ``readable_records`` for this (Goal, Agent), now — and the ``replay_dropped``
    counts of the others, by reason. Never writes."""
    refs = list(dict.fromkeys(r for r in record_refs if isinstance(r, str)))
    now = now or clock.now()
    if not refs:
        return [], replay_dropped()
    readable = set(
        readable_records(goal_id=goal_id, agent_id=agent_id, corpus=corpus, now=now)
        .filter(record_ref__in=refs)
        .values_list("record_ref", flat=True)
    )
    rows = {
        r.record_ref: r
        for r in MemoryRecord.objects.select_related("authority_checkpoint").filter(
            record_ref__in=[ref for ref in refs if ref not in readable]
        )
    }
    kept, counts = [], {}
    for ref in refs:
        if ref in readable:
            kept.append(ref)
            continue
        reason = _drop_reason(rows.get(ref), now)
        counts[reason] = counts.get(reason, 0) + 1
    return kept, replay_dropped(counts)


def record_present_state(
    record: MemoryRecord | None, *, goal_id: str | None, agent_id: str | None, now=None
) -> tuple[str, bool]:
    """``(state, available_for_recall)`` of a record as a fresh read sees it now: the
    state is ``active`` only when ``readable_records`` returns it for this (Goal, Agent);
    otherwise the ``REPLAY_DROP_REASONS`` entry that keeps it out."""
    now = now or clock.now()
    if record is None:
        return "missing", False
    if (
        readable_records(goal_id=goal_id, agent_id=agent_id, corpus=record.corpus, now=now)
        .filter(pk=record.pk)
        .exists()
    ):
        return c.ACTIVE, True
    record = (
        MemoryRecord.objects.select_related("authority_checkpoint").filter(pk=record.pk).first()
    )
    return _drop_reason(record, now), False


def route_corpus_id(goal_id: str | None, agent_id: str | None, surface: Any) -> str | None:
    """The surface's ``ingest_corpus_id`` in the (Goal, Agent)'s verified experiment
    config; else (a no-write evaluation) the one active corpus that allowlists this exact
    (Goal, Agent) and declares this exact surface, or ``None`` — never a guess among
    several, never by similarity."""
    if not goal_id or not agent_id or not isinstance(surface, str):
        return None
    configured = experiment_route(goal_id, agent_id).surface(surface)
    if configured is not None:  # the Agent's verified experiment names the ingest corpus
        return configured.ingest_corpus_id
    matches = [
        corpus.corpus_id
        for corpus in Corpus.objects.filter(active=True).order_by("corpus_id")
        if is_allowlisted(corpus, goal_id, agent_id) and surface in (corpus.surfaces or [])
    ]
    return matches[0] if len(matches) == 1 else None


# -- peers ---------------------------------------------------------------------------------
def binding_peer(corpus: Corpus, goal_id: str | None, agent_id: str | None) -> str | None:
    """The actor peer of the operator-configured binding for this (Goal, Agent): the
    allowlist row's ``actor_peer_id``, else what the corpus's provider derives for the
    pair (``Provider.actor_peer_for``). Never read from a URI or a request."""
    if not goal_id or not agent_id:
        return None
    configured = (corpus.agent_peers or {}).get(agent_key(goal_id, agent_id))
    if configured:
        return configured
    try:
        return providers.get(corpus.provider_id).actor_peer_for(goal_id, agent_id)
    except providers.ProviderUnavailable:
        return None


def owner_write_peer(corpus: Corpus) -> str | None:
    """The peer an owner's write (apply review) uses on a peer-scoped corpus: the
    configured peer of an allowlisted Agent equal to the scope's peer, if any."""
    uri_peer = uris.peer_of(corpus.provider_scope_ref)
    if uri_peer is None:
        return None
    for key in corpus.agent_allowlist or []:
        goal_id, agent_id = key.split("/", 1)
        if binding_peer(corpus, goal_id, agent_id) == uri_peer:
            return uri_peer
    return None


# -- authority -------------------------------------------------------------------------------
ROLE_FIELDS = {
    c.OWNER_ROLE: "owner",
    c.REVIEWER_ROLE: "reviewer",
    c.RETIREMENT_ROLE: "retirement_authority",
    c.AUTHORITY_SOURCE_ROLE: "authority_source",
}


def acts_as(principal: Principal | None, corpus: Corpus, role: str) -> bool:
    """Whether the authenticated ``principal`` holds ``role`` on ``corpus``: an operator
    account equal to the corpus's declared actor, or a host token an operator bound to
    that role (live ``CorpusRoleBinding``)."""
    if principal is None:
        return False
    if principal.is_operator:
        return principal.actor_ref == getattr(corpus, ROLE_FIELDS[role])
    return (
        principal.token_id is not None
        and CorpusRoleBinding.objects.filter(
            corpus=corpus,
            role=role,
            host_token_id=principal.token_id,
            host_token__revoked_at__isnull=True,
            revoked_at__isnull=True,
        ).exists()
    )


def checkpoint_facts(checkpoint_id: str, *, now=None) -> authority.CheckpointFacts | None:
    row = AuthorityCheckpoint.objects.filter(checkpoint_id=checkpoint_id).first()
    if row is None:
        return None
    now = now or clock.now()
    state = "live"
    if row.revoked_at is not None:
        state = "revoked"
    elif row.expires_at is not None and row.expires_at <= now:
        state = "expired"
    return authority.CheckpointFacts(
        checkpoint_id=row.checkpoint_id,
        project=row.project,
        actor=row.actor,
        role=row.role,
        action_scopes=frozenset(authority.normalise_scopes(row.action_scopes)),
        live=state == "live",
        state=state,
    )


def checkpoint_lookup(now=None) -> guards.CheckpointLookup:
    return lambda ref: checkpoint_facts(ref, now=now)


def get_checkpoint(checkpoint_id: str) -> AuthorityCheckpoint:
    row = AuthorityCheckpoint.objects.filter(checkpoint_id=checkpoint_id).first()
    if row is None:
        raise RewardMemoryError(
            "checkpoint_not_found", "No authority checkpoint with that id.", field="checkpoint_id"
        )
    return row


def checkpoint_payload(row: AuthorityCheckpoint, *, now=None) -> dict[str, Any]:
    facts = checkpoint_facts(row.checkpoint_id, now=now)
    return {
        "schema_version": "reward_memory_authority_checkpoint_v0",
        "checkpoint_id": row.checkpoint_id,
        "project": row.project,
        "actor": row.actor,
        "role": row.role,
        "action_scopes": list(row.action_scopes or []),
        "verified_by": row.verified_by,
        "verified_at": clock.iso(row.verified_at),
        "expires_at": clock.iso(row.expires_at),
        "revoked_at": clock.iso(row.revoked_at),
        "revoked_by": row.revoked_by or None,
        "state": facts.state if facts else "unknown",
    }


def list_checkpoints(*, project: str | None = None) -> list[AuthorityCheckpoint]:
    rows = AuthorityCheckpoint.objects.order_by("checkpoint_id")
    return list(rows.filter(project=project) if project else rows)


def open_closure(corpus: Corpus, candidate: dict[str, Any], candidate_ref: str):
    """The open ``LineageClosure`` that blocks this candidate, or ``None``.

    Matched on the candidate identity or its content digest; a candidate whose
    ``lineage.prior_candidate_ref`` names the closed candidate is a new decision."""
    from reward_memory import candidates

    digest = candidates.lineage_digest(candidate)
    prior = (candidate.get("lineage") or {}).get("prior_candidate_ref")
    closures = LineageClosure.objects.filter(corpus=corpus, reopened_at__isnull=True).filter(
        Q(candidate_ref=candidate_ref) | Q(content_digest=digest)
    )
    if prior:
        closures = closures.exclude(candidate_ref=prior)
    return closures.order_by("closed_at").first()


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


def soft_preference_documents(
    project: str, *, goal_id: str | None, agent_id: str | None
) -> list[dict[str, Any]]:
    """The ``soft_preference`` records of ``project`` the (Goal, Agent) may read
    (``readable_records``), for the built-in semantic-preference provider: ``ref``
    (opaque record ref), ``summary``, ``surfaces``. No Goal → no documents."""
    rows = (
        readable_records(
            goal_id=goal_id, agent_id=agent_id, memory_class=c.SOFT_PREFERENCE, project=project
        )
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


# -- the experiment route -------------------------------------------------------------------
@dataclass(frozen=True)
class ExperimentRoute:
    """What the experiment registry allows one (Goal, Agent) — resolved from the
    registry row *and* a fresh read of the private config (digest compared)."""

    goal_id: str
    agent_id: str
    status: str
    reason_code: str | None = None
    binding: Any = None
    config: Any = None
    receipt: dict[str, Any] | None = None
    readback_status: str = "not_attempted"

    @property
    def available(self) -> bool:
        return self.status == "available"

    @property
    def automation(self) -> dict[str, bool]:
        if not self.available:
            return {"automatic_recall": False, "automatic_ingest": False, "fail_open": True}
        return dict(self.config.automation)

    def surface(self, surface_id: str | None):
        """The configured surface (``None`` unless available and declared)."""
        if not self.available or not isinstance(surface_id, str):
            return None
        return self.config.surfaces.get(surface_id)


def experiment_binding(goal_id: str):
    from reward_memory.models import ExperimentBinding

    return ExperimentBinding.objects.filter(goal__goal_id=goal_id).first()


def experiment_route(goal_id: str, agent_id: str, surface: str | None = None) -> ExperimentRoute:
    """The one read of a (Goal, Agent)'s Reward Memory experiment (never a provider call).

    ``available`` only when the Goal's binding is enabled, allowlists the Agent, the
    private config still reads back with the registered digest, validates as v1 against
    the registered corpora, and the Agent's receipt is verified for that digest. Other
    apps (turn recall) call this; ``route.surface(surface_id)`` gives the configured
    corpora, ingest corpus and recall profile of one surface. ``surface`` (optional)
    narrows ``status`` to ``surface_not_configured`` when that surface is not declared.
    """
    from reward_memory import experiment_config as cfg

    binding = experiment_binding(goal_id)
    base = {"goal_id": goal_id, "agent_id": agent_id, "binding": binding}
    if binding is None or not binding.enabled:
        return ExperimentRoute(status="disabled", **base)
    if agent_id not in (binding.agent_allowlist or []):
        return ExperimentRoute(status="agent_not_enabled", **base)
    try:
        data = cfg.read_config_bytes(binding.config_path)
    except RewardMemoryError:
        return ExperimentRoute(
            status="config_invalid",
            reason_code="config_unavailable_or_invalid",
            readback_status="rejected",
            **base,
        )
    digest = cfg.config_digest(data)
    receipt = (binding.receipts or {}).get(agent_id)
    try:
        config = cfg.load_bytes(data)
        cfg.check_registered(config)
    except RewardMemoryError:
        return ExperimentRoute(
            status="config_invalid",
            reason_code="config_unavailable_or_invalid",
            readback_status="rejected",
            receipt=receipt,
            **base,
        )
    if digest != binding.config_digest or not receipt or receipt.get("config_digest") != digest:
        return ExperimentRoute(
            status="enablement_stale",
            reason_code="config_digest_missing_or_drifted",
            readback_status="drifted",
            config=config,
            receipt=receipt,
            **base,
        )
    if not (
        receipt.get("status") == "verified"
        and receipt.get("goal_id") == goal_id
        and receipt.get("agent_id") == agent_id
        and receipt.get("provider_id") == config.provider_id
        and receipt.get("writability_verified") is True
        and receipt.get("exact_readback_verified") is True
    ):
        return ExperimentRoute(
            status="enablement_unverified",
            reason_code="provider_write_preflight_missing_or_unverified",
            readback_status="unverified",
            config=config,
            receipt=receipt,
            **base,
        )
    if surface is not None and surface not in config.surfaces:
        return ExperimentRoute(
            status="surface_not_configured",
            reason_code="surface_not_in_config",
            readback_status="verified",
            config=config,
            receipt=receipt,
            **base,
        )
    return ExperimentRoute(
        status="available", readback_status="verified", config=config, receipt=receipt, **base
    )
