"""The explicit Agent preference journal (spec Part A).

A scope is the exact tuple runtime + Goal ``state_ref`` + Goal ``instance_id`` +
``goal_id`` + ``agent_id`` (``scope_key`` is its digest). Its ``revision`` is the
journal revision: every committed operation advances it by one, and the database
guarantees that no two operations of a scope share a revision, a sequence or an
operation id. Rows change only through ``preferences.services``.
"""

from django.db import models
from django.db.models import Q

from loopx_site.core.model_bases import check, unique


class PreferenceScope(models.Model):
    scope_key = models.CharField(max_length=64, unique=True)
    runtime_id = models.CharField(max_length=128)
    goal = models.ForeignKey("core.Goal", on_delete=models.PROTECT, related_name="+")
    agent = models.ForeignKey(
        "core.Agent", on_delete=models.PROTECT, related_name="preference_scopes"
    )
    goal_ref = models.CharField("goal id", max_length=128)
    agent_ref = models.CharField("agent id", max_length=128)
    state_ref = models.CharField(max_length=1024, blank=True)
    instance_id = models.CharField(max_length=128, blank=True)
    revision = models.PositiveIntegerField(null=True, blank=True)
    journal_started_at = models.DateTimeField(null=True, blank=True)
    # Capacity bookkeeping, advanced with the revision under the scope lock: the number
    # of current subjects and the sum of their stored item sizes (never recomputed).
    subject_count = models.PositiveIntegerField(default=0)
    used_bytes = models.PositiveIntegerField(default=0)
    migrated_from = models.ForeignKey(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["goal_ref", "agent_ref", "-created_at"]
        constraints = [
            check(
                "revision_journal",
                Q(revision__isnull=True, journal_started_at__isnull=True)
                | Q(revision__gte=1, journal_started_at__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.goal_ref}/{self.agent_ref} @ {self.state_ref or '-'}"


class OperationKind(models.TextChoices):
    REMEMBER = "remember"
    RETIRE = "retire"
    MIGRATE = "migrate"


class PreferenceOperation(models.Model):
    """One committed journal entry; append-only."""

    # No separate index on ``scope``: the unique constraints below lead with it.
    scope = models.ForeignKey(
        PreferenceScope, on_delete=models.PROTECT, related_name="journal", db_index=False
    )
    sequence = models.PositiveIntegerField()
    operation_id = models.CharField(max_length=128)
    kind = models.CharField(max_length=16, choices=OperationKind.choices)
    key = models.CharField(max_length=128)
    statement = models.TextField(null=True, blank=True)
    source_ref = models.CharField(max_length=1024)
    source_quote = models.TextField()
    expected_revision = models.PositiveIntegerField(null=True, blank=True)
    resulting_revision = models.PositiveIntegerField()
    predecessor_operation_id = models.CharField(max_length=128, null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    # sha256 of the canonical intent (scope, action, operation id, key, expected
    # revision, source ref/quote, statement, expiry): equal → replay, else conflict.
    intent_hash = models.CharField(max_length=64)
    receipt = models.JSONField()
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["scope", "sequence"]
        constraints = [
            unique("operation", "scope", "operation_id"),
            unique("revision", "scope", "resulting_revision"),
            # ``sequence`` counts the scope's own entries 1, 2, 3… without gaps, while
            # ``resulting_revision`` continues the Goal/Agent's revisions across scopes
            # (a scope the Agent moved to starts past every revision issued before);
            # history pages walk this index.
            unique("sequence", "scope", "sequence"),
            check("kind", Q(kind__in=["remember", "retire", "migrate"])),
            check(
                "statement",
                Q(kind="retire", statement__isnull=True)
                | Q(kind="remember", statement__isnull=False)
                | Q(kind="migrate"),
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.sequence} {self.kind} {self.key}"


class SubjectState(models.TextChoices):
    ACTIVE = "active"
    RETIRED = "retired"


class PreferenceSubject(models.Model):
    """The current view of one key: the latest operation on it."""

    # No separate index on ``scope``: the unique (scope, key) constraint leads with it and
    # returns a scope's subjects already in key order.
    scope = models.ForeignKey(
        PreferenceScope, on_delete=models.PROTECT, related_name="subjects", db_index=False
    )
    key = models.CharField(max_length=128)
    state = models.CharField(max_length=16, choices=SubjectState.choices)
    statement = models.TextField(null=True, blank=True)
    source_ref = models.CharField(max_length=1024)
    expires_at = models.DateTimeField(null=True, blank=True)
    revision = models.PositiveIntegerField()
    operation = models.OneToOneField(
        PreferenceOperation, on_delete=models.PROTECT, related_name="+"
    )
    updated_at = models.DateTimeField()
    # The stored wire item (canonical JSON of LoopX's ``agent_preferences_v1`` item) and
    # its byte length, written with the row so reads never rebuild it and capacity is
    # never recomputed from JSON.
    item = models.TextField()
    size = models.PositiveIntegerField()

    class Meta:
        ordering = ["scope", "key"]
        constraints = [
            unique("key", "scope", "key"),
            check(
                "state",
                Q(state="retired", statement__isnull=True)
                | Q(state="active", statement__isnull=False),
            ),
            check("item_size", Q(size__gte=2)),
        ]

    def __str__(self) -> str:
        return f"{self.key} ({self.state})"
