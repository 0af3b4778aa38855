"""Reward Memory state.

Only ``reward_memory.services`` writes these rows. Invariants the services rely on are
backed by named constraints: one *active* record per candidate per corpus, an active
record always has a verified readback, a superseded record names its successor, one
active standing policy per corpus surface, one ingest event per (Agent, event), and the
transition history never enters a state twice.
"""

from django.db import models
from django.db.models import Q

from loopx_site.core.model_bases import check as _check
from loopx_site.core.model_bases import goal_and_agent
from loopx_site.core.model_bases import unique as _unique
from reward_memory import contracts as c

MEMORY_CLASS_CHOICES = [(v, v) for v in c.MEMORY_CLASSES]
LIFECYCLE_CHOICES = [(v, v) for v in c.LIFECYCLE_STATES]
DECISION_CHOICES = [(v, v) for v in c.DECISIONS]
GUARD_CHOICES = [(c.GUARD_PASSED, c.GUARD_PASSED), (c.GUARD_BLOCKED, c.GUARD_BLOCKED)]
INGEST_CHOICES = [(v, v) for v in c.INGEST_STATUSES]
RECALL_MODE_CHOICES = [(v, v) for v in c.RECALL_MODES]
RECALL_STATUS_CHOICES = [(v, v) for v in c.RECALL_STATUSES]
APPLICATION_DECISION_CHOICES = [(v, v) for v in c.APPLICATION_DECISIONS]
APPLICATION_STATUS_CHOICES = [(v, v) for v in c.APPLICATION_STATUSES]
LEXICAL, HYBRID = "lexical", "hybrid"
RANKINGS = (LEXICAL, HYBRID)


class Corpus(models.Model):
    """A registered corpus: one memory class, one project, declared surfaces and owners.

    ``provider_scope_ref`` is the private provider binding (never in public payloads;
    ``provider_binding_ref`` is its public digest).
    """

    corpus_id = models.CharField(max_length=128, unique=True)
    memory_class = models.CharField(max_length=32, choices=MEMORY_CLASS_CHOICES)
    owner = models.CharField(max_length=256, help_text="Actor whose write authority persists.")
    reviewer = models.CharField(max_length=256)
    authority_source = models.CharField(max_length=256)
    retirement_authority = models.CharField(max_length=256)
    project = models.CharField(max_length=128, db_index=True)
    surfaces = models.JSONField(default=list)
    freshness_policy = models.JSONField(default=dict)
    privacy = models.JSONField(default=dict)
    provider_id = models.CharField(max_length=64)
    provider_scope_ref = models.CharField(max_length=512)
    provider_binding_ref = models.CharField(max_length=71)
    agent_allowlist = models.JSONField(
        default=list, help_text='Agents allowed to ingest and recall, as "goal_id/agent_id".'
    )
    agent_peers = models.JSONField(
        default=dict,
        blank=True,
        help_text='Operator-configured actor peer per allowlisted "goal_id/agent_id".',
    )
    definition_digest = models.CharField(max_length=71)
    revision = models.PositiveIntegerField(default=1)
    active = models.BooleanField(default=True)
    ranking = models.CharField(
        max_length=16,
        choices=[(r, r) for r in RANKINGS],
        default=LEXICAL,
        help_text="How the local provider ranks a recall: lexical (exact BM25) or hybrid "
        "(BM25 fused with dense embeddings, with a relevance floor).",
    )
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["corpus_id"]
        verbose_name_plural = "corpora"
        constraints = [
            _check("memory_class", Q(memory_class__in=c.MEMORY_CLASSES)),
            _check("revision_min", Q(revision__gte=1)),
            _check("ranking", Q(ranking__in=RANKINGS)),
        ]

    def __str__(self) -> str:
        return self.corpus_id


def _corpus_key(related_name: str, *, on_delete=models.PROTECT) -> models.ForeignKey:
    """The corpus a row belongs to (protected: a corpus with history is never deleted)."""
    return models.ForeignKey(Corpus, on_delete=on_delete, related_name=related_name)


class StandingPolicy(models.Model):
    """``reward_memory_standing_policy_v0``: one approval of an exact boundary."""

    corpus = _corpus_key("policies")
    surface = models.CharField(max_length=128)
    policy_digest = models.CharField(max_length=71)
    document = models.JSONField()
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField()
    retired_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["corpus__corpus_id", "surface", "-created_at"]
        verbose_name_plural = "standing policies"
        constraints = [
            _unique("digest", "corpus", "policy_digest"),
            _unique("active_surface", "corpus", "surface", condition=Q(active=True)),
        ]

    def __str__(self) -> str:
        return f"{self.corpus_id}:{self.surface}:{self.policy_digest[:15]}"


class Candidate(models.Model):
    """A recorded ``reward_memory_candidate_v0`` (written when a review is executed)."""

    corpus = _corpus_key("candidates")
    candidate_ref = models.CharField(max_length=69)
    target_class = models.CharField(max_length=32, blank=True, default="")
    project = models.CharField(max_length=128, blank=True, default="")
    surface = models.CharField(max_length=128, blank=True, default="")
    document = models.JSONField(
        null=True, blank=True, help_text="Withheld (null) when the shape scan refused it."
    )
    guard_status = models.CharField(max_length=16, choices=GUARD_CHOICES)
    guard_reasons = models.JSONField(default=list)
    prior_candidate_ref = models.CharField(max_length=69, blank=True, default="")
    duplicate_of = models.CharField(
        max_length=68,
        blank=True,
        default="",
        help_text="The active record of the same corpus this candidate restates, "
        "when the review found one (services.duplicates).",
    )
    duplicate_similarity = models.FloatField(
        null=True, blank=True, help_text="Cosine of the two texts' embeddings (0..1)."
    )
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            _unique("ref", "corpus", "candidate_ref"),
        ]

    def __str__(self) -> str:
        return self.candidate_ref


class Review(models.Model):
    """A recorded ``reward_memory_candidate_review_v0`` decision (not a persistence act)."""

    review_id = models.CharField(max_length=69, unique=True)
    corpus = _corpus_key("reviews")
    candidate = models.ForeignKey(Candidate, on_delete=models.PROTECT, related_name="reviews")
    requested_decision = models.CharField(max_length=16, choices=DECISION_CHOICES)
    effective_decision = models.CharField(max_length=16, choices=DECISION_CHOICES)
    reviewer = models.CharField(max_length=256)
    guard_status = models.CharField(max_length=16, choices=GUARD_CHOICES)
    target_record_ref = models.CharField(max_length=68, blank=True, default="")
    revised_candidate_ref = models.CharField(max_length=69, blank=True, default="")
    document = models.JSONField()
    created_at = models.DateTimeField()
    applied_at = models.DateTimeField(null=True, blank=True)
    applied_record_ref = models.CharField(max_length=68, blank=True, default="")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            _check(
                "blocked_no_write",
                ~Q(guard_status=c.GUARD_BLOCKED) | Q(effective_decision__in=["reject", "no_write"]),
            ),
            _check(
                "decision",
                Q(effective_decision__in=c.DECISIONS) & Q(requested_decision__in=c.DECISIONS),
            ),
        ]

    def __str__(self) -> str:
        return self.review_id


class MemoryRecord(models.Model):
    """An active-record envelope (``reward_memory_active_record_v0``) and its lifecycle.

    ``content`` is the immutable document written to the provider (``content_digest``
    is its canonical digest); lifecycle fields are LoopX state and change only through
    ``reward_memory.services`` transitions, each journaled in ``RecordTransition``.
    """

    record_ref = models.CharField(max_length=68, unique=True)
    corpus = _corpus_key("records")
    candidate_ref = models.CharField(max_length=69, db_index=True)
    memory_class = models.CharField(max_length=32, choices=MEMORY_CLASS_CHOICES)
    project = models.CharField(max_length=128)
    surface = models.CharField(max_length=128)
    summary = models.TextField(help_text="Private content summary (never in public packets).")
    content = models.JSONField()
    content_digest = models.CharField(max_length=71)
    activation_basis = models.CharField(max_length=32)
    policy_digest = models.CharField(max_length=71, blank=True, default="")
    review = models.ForeignKey(
        Review, on_delete=models.PROTECT, null=True, blank=True, related_name="records"
    )
    authority_checkpoint = models.ForeignKey(
        "AuthorityCheckpoint",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="records",
        help_text="The verified checkpoint a hard_policy record derives its scope from.",
    )
    writer = models.CharField(max_length=256)
    source_kind = models.CharField(max_length=64)
    source_actor = models.CharField(max_length=256)
    observed_at = models.DateTimeField()
    confidence_level = models.CharField(max_length=8)
    authority = models.JSONField(default=dict)
    lifecycle_state = models.CharField(max_length=24, choices=LIFECYCLE_CHOICES)
    expires_at = models.DateTimeField(null=True, blank=True)
    superseded_by = models.ForeignKey(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="supersedes"
    )
    revocation = models.JSONField(null=True, blank=True)
    retirement = models.JSONField(null=True, blank=True)
    provider_id = models.CharField(max_length=64)
    provider_resource_ref = models.CharField(max_length=512)
    provider_ref_digest = models.CharField(max_length=71)
    # The actor peer the provider write used (OpenViking: the peer the record's files live
    # under); a provider delete is sent with this identity binding. Empty: none, or a
    # record written before it was kept (``provider_deletions.binding_for`` falls back).
    provider_actor_peer_id = models.CharField(max_length=128, blank=True, default="")
    readback_verified_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    activated_at = models.DateTimeField(null=True, blank=True)
    state_changed_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(
                fields=["corpus", "surface", "lifecycle_state"],
                name="reward_mem_rec_corpus_surf_idx",
            ),
            models.Index(
                fields=["memory_class", "project", "lifecycle_state"],
                name="reward_mem_rec_class_proj_idx",
            ),
        ]
        constraints = [
            _check(
                "hard_policy_checkpoint",
                ~Q(memory_class=c.HARD_POLICY)
                | ~Q(lifecycle_state=c.ACTIVE)
                | Q(authority_checkpoint__isnull=False),
            ),
            _unique(
                "active_candidate", "corpus", "candidate_ref", condition=Q(lifecycle_state=c.ACTIVE)
            ),
            _unique("resource", "corpus", "provider_resource_ref"),
            _check("lifecycle", Q(lifecycle_state__in=c.LIFECYCLE_STATES)),
            _check(
                "active_readback",
                ~Q(lifecycle_state=c.ACTIVE) | Q(readback_verified_at__isnull=False),
            ),
            _check(
                "superseded_by", ~Q(lifecycle_state=c.SUPERSEDED) | Q(superseded_by__isnull=False)
            ),
        ]

    def __str__(self) -> str:
        return self.record_ref


class ProviderDeletion(models.Model):
    """The outbox row of one closed record's provider delete (retire, revoke, supersede,
    expiry, checkpoint revocation, erasure): attempted after the closing commit with the
    record's own identity binding, retried by ``loopx.reward_memory.provider_deletions``
    with exponential backoff, and ``confirmed`` only when the provider's search no longer
    returns the record (``services.provider_deletions``). ``failure_kind`` is a bounded
    word, never provider text."""

    STATES = ("pending", "confirmed", "failed")
    FAILURE_KINDS = (
        "not_installed",
        "unavailable",
        "timed_out",
        "invalid_response",
        "forbidden",
        "still_found",
    )

    record = models.OneToOneField(
        MemoryRecord, on_delete=models.PROTECT, related_name="provider_deletion"
    )
    provider_id = models.CharField(max_length=64)
    reason = models.CharField(max_length=32)
    state = models.CharField(max_length=16, choices=[(s, s) for s in STATES], default="pending")
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    failure_kind = models.CharField(
        max_length=32, blank=True, default="", choices=[(k, k) for k in FAILURE_KINDS]
    )
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    confirmed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["next_attempt_at", "id"]
        indexes = [
            models.Index(fields=["state", "next_attempt_at"], name="reward_mem_del_due_idx"),
        ]
        constraints = [
            _check("state", Q(state__in=["pending", "confirmed", "failed"])),
            _check(
                "confirmed_at",
                Q(state="confirmed", confirmed_at__isnull=False)
                | (~Q(state="confirmed") & Q(confirmed_at__isnull=True)),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.record_id} {self.state}"


class RecordTransition(models.Model):
    """Immutable history of a record's lifecycle (creation included)."""

    record = models.ForeignKey(MemoryRecord, on_delete=models.PROTECT, related_name="transitions")
    seq = models.PositiveIntegerField()
    from_state = models.CharField(max_length=24, blank=True, default="")
    to_state = models.CharField(max_length=24, choices=LIFECYCLE_CHOICES)
    reason = models.CharField(max_length=64)
    actor = models.CharField(max_length=256)
    reference = models.CharField(max_length=256, blank=True, default="")
    at = models.DateTimeField()

    class Meta:
        ordering = ["record_id", "seq"]
        constraints = [
            _unique("seq", "record", "seq"),
            _unique("state_once", "record", "to_state"),
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.from_state or 'new'} → {self.to_state}"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise ValueError("record transitions are immutable")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ValueError("record transitions are immutable")


class RecordEvidence(models.Model):
    """A duplicate candidate's evidence added to an existing record's lineage: accepting
    a candidate that restates an active record adds a row here instead of a second
    active record (``services.lineage.add_evidence``)."""

    record = models.ForeignKey(MemoryRecord, on_delete=models.PROTECT, related_name="evidence")
    candidate_ref = models.CharField(max_length=69)
    evidence_ref = models.CharField(max_length=256, blank=True, default="")
    review = models.ForeignKey(
        Review, on_delete=models.PROTECT, null=True, blank=True, related_name="evidence"
    )
    event = models.ForeignKey(
        "IngestEvent",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="evidence",
        help_text="The standing-policy ingest event whose candidate restated the record "
        "(blank when a reviewer accepted the duplicate: see review).",
    )
    lineage_digest = models.CharField(
        max_length=71,
        blank=True,
        default="",
        help_text="The duplicate candidate's content identity (domain.candidates."
        "lineage_digest): closing the record closes this lineage too.",
    )
    similarity = models.FloatField(null=True, blank=True)
    added_by = models.CharField(max_length=256)
    added_at = models.DateTimeField()

    class Meta:
        ordering = ["record_id", "added_at"]
        verbose_name_plural = "record evidence"
        constraints = [
            _unique("candidate", "record", "candidate_ref"),
        ]

    def __str__(self) -> str:
        return f"{self.record_id}+{self.candidate_ref}"


class IngestEvent(models.Model):
    """One compact event ingested by one Agent: immutable ``observed_at``, latest receipt.

    ``event_ref`` is the digest of the whole event (its content); ``event_key`` the
    digest of its ``event_id`` (blank when the event names none). One event id per
    (Agent, corpus) — the same id with other content is ``operation_conflict``.
    """

    event_ref = models.CharField(max_length=68)
    event_key = models.CharField(
        max_length=71,
        blank=True,
        default="",
        help_text="sha256 of the event's event_id (the idempotency key); blank: none.",
    )
    goal, agent = goal_and_agent("+")
    corpus = _corpus_key("ingest_events")
    adapter = models.CharField(max_length=64)
    candidate_ref = models.CharField(max_length=69)
    record = models.ForeignKey(
        MemoryRecord, on_delete=models.PROTECT, null=True, blank=True, related_name="events"
    )
    duplicate_of = models.CharField(
        max_length=68,
        blank=True,
        default="",
        help_text="The active record of the corpus this event's candidate restates: its "
        "evidence joined that record instead of a second active record (services.duplicates).",
    )
    duplicate_similarity = models.FloatField(
        null=True, blank=True, help_text="Cosine of the two texts' embeddings (0..1)."
    )
    status = models.CharField(max_length=24, choices=INGEST_CHOICES)
    observed_at = models.DateTimeField()
    event = models.JSONField(help_text="The compact, guard-checked event (retried as is).")
    receipt = models.JSONField(null=True, blank=True)
    submitted_by = models.CharField(
        max_length=256,
        blank=True,
        default="",
        help_text="The authenticated principal that first executed the event (never a "
        "request field); a retry re-resolves its role bindings from the present.",
    )
    submitted_token = models.ForeignKey(
        "core.HostToken", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            _unique("agent_event", "agent", "event_ref"),
            _unique(
                "agent_corpus_event_id", "agent", "corpus", "event_key", condition=~Q(event_key="")
            ),
            _check("status", Q(status__in=c.INGEST_STATUSES)),
        ]

    def __str__(self) -> str:
        return f"{self.event_ref} ({self.status})"


class PendingIngest(models.Model):
    """The sidecar row of an ingest whose provider commit or readback is unresolved.

    Retried with the same deterministic event (``reconcile_pending_ingests``) at the
    next turn start; ``resolved_at`` is set when the retry activates.
    """

    event = models.OneToOneField(IngestEvent, on_delete=models.CASCADE, related_name="sidecar")
    goal, agent = goal_and_agent("+")
    reason = models.CharField(max_length=24, choices=INGEST_CHOICES)
    attempts = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField()
    last_attempt_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]
        indexes = [
            models.Index(fields=["agent", "resolved_at"], name="reward_mem_pending_agent_idx")
        ]

    def __str__(self) -> str:
        return f"pending {self.event_id} ({self.reason})"


class RecallReceipt(models.Model):
    """The public packet of one executed recall (query text never stored)."""

    recall_id = models.CharField(max_length=69, unique=True)
    corpus = _corpus_key("recalls")
    goal, agent = goal_and_agent("+")
    surface = models.CharField(max_length=128)
    mode = models.CharField(max_length=32, choices=RECALL_MODE_CHOICES)
    status = models.CharField(max_length=24, choices=RECALL_STATUS_CHOICES)
    query_count = models.PositiveSmallIntegerField()
    result_refs = models.JSONField(default=list)
    packet = models.JSONField()
    provider_calls = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            _check("query_budget", Q(query_count__lte=3)),
        ]

    def __str__(self) -> str:
        return self.recall_id


class ApplicationReceipt(models.Model):
    """``reward_memory_application_receipt_v0``: hashed refs, reasoning, verification."""

    application_receipt_id = models.CharField(max_length=69, unique=True)
    recall = models.ForeignKey(RecallReceipt, on_delete=models.PROTECT, related_name="applications")
    corpus = _corpus_key("applications")
    decision = models.CharField(max_length=16, choices=APPLICATION_DECISION_CHOICES)
    status = models.CharField(max_length=16, choices=APPLICATION_STATUS_CHOICES)
    receipt = models.JSONField()
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            _check("status", Q(status__in=c.APPLICATION_STATUSES)),
        ]

    def __str__(self) -> str:
        return self.application_receipt_id


class LocalProviderDocument(models.Model):
    """Storage of the built-in ``local`` provider (in the project database).

    Searchable documents are also in the shared full-text index
    (``loopx_site.engines.fulltext``) under a per-(scope, surface) namespace.
    """

    scope_key = models.CharField(max_length=64, help_text="sha256 of the private scope ref.")
    resource_ref = models.CharField(max_length=512)
    surface = models.CharField(max_length=128)
    content = models.TextField()
    content_digest = models.CharField(max_length=71)
    recallable = models.BooleanField(default=True)
    embedding = models.BinaryField(
        null=True,
        editable=False,
        help_text="Dense vector of the searchable text (loopx_site.engines.embeddings), "
        "computed at write time; null until backfilled.",
    )
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [
            _unique("resource", "scope_key", "resource_ref"),
        ]

    def __str__(self) -> str:
        return self.content_digest


class LocalProviderNamespace(models.Model):
    """A generation per (scope, surface) of the ``local`` provider, moved by every write
    and retirement in the same transaction: the hybrid ranking's cache of a namespace's
    vectors is valid exactly while this number is unchanged (one index lookup a recall)."""

    scope_key = models.CharField(max_length=64)
    surface = models.CharField(max_length=128)
    generation = models.BigIntegerField(default=1)
    nonce = models.CharField(max_length=32, help_text="Random, new at every bump.")

    class Meta:
        constraints = [_unique("namespace", "scope_key", "surface")]

    def __str__(self) -> str:
        return f"{self.surface}@{self.generation}"


class AuthorityCheckpoint(models.Model):
    """Independently verified action authority, created and revoked only by operators
    (the admin with the model permission, or ``manage.py reward_memory checkpoint …
    --execute``) — never through a host token.

    A hard_policy candidate names a checkpoint by ``checkpoint_id``; the guard compares
    the candidate with *this row* (actor, role, project, a superset of the requested
    action scopes, live: not revoked, not expired). Revoking a checkpoint revokes every
    active record derived from it in the same transaction.
    """

    checkpoint_id = models.CharField(max_length=128, unique=True)
    project = models.CharField(max_length=128, db_index=True)
    actor = models.CharField(max_length=256, help_text="The verified actor, e.g. user:maint-1.")
    role = models.CharField(max_length=64)
    action_scopes = models.JSONField(default=list)
    evidence_ref = models.CharField(max_length=256, blank=True, default="")
    verified_by = models.CharField(max_length=256, help_text="The operator account that granted.")
    verified_at = models.DateTimeField()
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.CharField(max_length=256, blank=True, default="")
    revocation_reason = models.CharField(max_length=300, blank=True, default="")

    class Meta:
        ordering = ["-verified_at"]
        # Revoking also revokes the checkpoint's active hard_policies: its own permission
        # (the admin action and ``services.revoke_checkpoint`` both require it).
        permissions = [
            ("revoke_authoritycheckpoint", "Can revoke an authority checkpoint"),
        ]
        constraints = [
            _check("revoked_by", Q(revoked_at__isnull=True) | ~Q(revoked_by="")),
        ]

    def __str__(self) -> str:
        return self.checkpoint_id


ROLE_CHOICES = [(v, v) for v in c.CORPUS_ROLES]


class CorpusRoleBinding(models.Model):
    """An operator's binding of a host token to one corpus role (owner, reviewer,
    retirement authority or authority source). Without it a host token is never the
    corpus's reviewer or owner, whatever a request says."""

    corpus = _corpus_key("role_bindings", on_delete=models.CASCADE)
    role = models.CharField(max_length=32, choices=ROLE_CHOICES)
    host_token = models.ForeignKey("core.HostToken", on_delete=models.CASCADE, related_name="+")
    granted_by = models.CharField(max_length=256)
    granted_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["corpus__corpus_id", "role"]
        constraints = [
            _unique("live", "corpus", "role", "host_token", condition=Q(revoked_at__isnull=True)),
            _check("role", Q(role__in=c.CORPUS_ROLES)),
        ]

    def __str__(self) -> str:
        return f"{self.corpus_id}:{self.role}:{self.host_token_id}"


class LineageClosure(models.Model):
    """A durable reject/retire/revoke: the candidate identity and its content digest stay
    closed in the corpus until an operator reopens them. Ingest, standing policy and
    review all refuse a closed lineage (``lineage_closed``); a new candidate whose
    ``lineage.prior_candidate_ref`` names the closed one is a new decision."""

    corpus = _corpus_key("closures")
    candidate_ref = models.CharField(max_length=69)
    content_digest = models.CharField(max_length=71, db_index=True)
    reason = models.CharField(max_length=16)
    reference = models.CharField(max_length=128, blank=True, default="")
    closed_by = models.CharField(max_length=256)
    closed_at = models.DateTimeField()
    reopened_by = models.CharField(max_length=256, blank=True, default="")
    reopened_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-closed_at"]
        constraints = [
            _unique("open", "corpus", "candidate_ref", condition=Q(reopened_at__isnull=True)),
            _check("reason", Q(reason__in=c.CLOSING_DECISIONS)),
        ]

    def __str__(self) -> str:
        return f"{self.candidate_ref} ({self.reason})"


class ExperimentBinding(models.Model):
    """The experiment registry row of one (Goal, Agent) — one binding per Agent, so
    enabling one Agent never changes another's route: default off, experimental, a
    pointer to the Agent's git-ignored config (relative path + digest, never its
    content), the allowlist (exactly this Agent) and its enablement receipt (proving a
    fresh non-recallable canary write with exact byte readback on the config's route).

    Written only by ``reward_memory.services.configure_goal``; read by
    ``reward_memory.route.experiment_route`` (which re-reads the config and compares
    digests, so drift disables automation without blocking ordinary work)."""

    goal, agent = goal_and_agent("reward_memory_experiments")
    enabled = models.BooleanField(default=False)
    experimental = models.BooleanField(default=True)
    config_path = models.CharField(max_length=512, help_text="Relative to the project checkout.")
    config_digest = models.CharField(max_length=71)
    private_config = models.BooleanField(
        default=True, help_text="The config routes to an Agent-private corpus (one Agent)."
    )
    agent_allowlist = models.JSONField(default=list, help_text="Exactly the row's Agent id.")
    receipts = models.JSONField(
        default=dict, help_text="The Agent's public-safe enablement receipt, by agent id."
    )
    revision = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["goal__goal_id", "agent__agent_id"]
        constraints = [
            _unique("goal_agent", "goal", "agent"),
            _check("experimental", Q(experimental=True)),
            _check("pointer", ~Q(config_path="") & ~Q(config_digest="")),
        ]

    def __str__(self) -> str:
        return f"{self.goal_id}/{self.agent_id} experiment"


REFLECTION_CHOICES = [(v, v) for v in c.REFLECTION_STATES]


class ReflectionCandidate(models.Model):
    """A post-settlement ``turn_reward_memory_reflection_v0`` of one (Goal, Agent) Turn.

    Stored ``awaiting_evidence_validation`` with zero provider calls; finalised (ingested
    with exact readback) only after the Turn settled and a server-built, passing
    ``reward_memory_reflection_validation_v0`` (same digest, same evidence refs) was
    recorded in ``validation`` — by the Todo's declared validator or by an operator.
    """

    goal, agent = goal_and_agent("+")
    turn_instance_id = models.CharField(max_length=128)
    reflection_digest = models.CharField(max_length=71)
    surface = models.CharField(max_length=128)
    evidence_refs = models.JSONField(default=list)
    reflection = models.JSONField(help_text="The compact reflection (no raw content).")
    status = models.CharField(max_length=32, choices=REFLECTION_CHOICES)
    ingest_receipt = models.JSONField(null=True, blank=True)
    turn_settled = models.BooleanField(
        default=False, help_text="The Turn's primary writeback committed before it was stored."
    )
    validation = models.JSONField(
        null=True,
        blank=True,
        help_text="The server-built reward_memory_reflection_validation_v0 (the Todo's "
        "validator run, or an operator's record); never a host's document.",
    )
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at"]
        permissions = [("record_reflection_validation", "Can record a reflection validation")]
        constraints = [
            _unique("digest", "agent", "reflection_digest"),
            _check("status", Q(status__in=c.REFLECTION_STATES)),
        ]

    def __str__(self) -> str:
        return f"{self.reflection_digest[:15]} ({self.status})"


class OperatorControl(models.Model):
    """A stored ``reward_memory_operator_control_v0`` decision (``operator-control
    --execute``): an authorised edit or retire of one record, idempotent on
    ``control_id`` (a digest of record, action, checkpoint, operator and reasoning). It
    writes no provider state; a dogfood batch references it by ``control_id``."""

    control_id = models.CharField(max_length=69, unique=True)
    record = models.ForeignKey(MemoryRecord, on_delete=models.PROTECT, related_name="controls")
    corpus = _corpus_key("controls")
    action = models.CharField(max_length=8, choices=[("edit", "edit"), ("retire", "retire")])
    control_ref = models.CharField(max_length=256, help_text="The operator checkpoint id.")
    operator = models.CharField(max_length=256)
    document = models.JSONField()
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            _check("action", Q(action__in=["edit", "retire"])),
        ]

    def __str__(self) -> str:
        return self.control_id


class ReviewQueueItem(OperatorControl):
    """The admin's review queue: operator-control *edits* whose replacement candidate
    the corpus reviewer decides and the owner applies (``services.review_queue``)."""

    class Meta:
        proxy = True
        verbose_name = "review queue item"
        verbose_name_plural = "review queue"
