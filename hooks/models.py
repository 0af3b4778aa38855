"""Turn settlement seam (primary) and the post-writeback hook sidecar (journal/outbox).

Primary records — written in one transaction by ``services.settle``:
``Todo`` state change, ``TurnSettlement``, committed ``DurableWritebackReceipt`` (with its
checkpoint digest) and the matching ``QuotaSpend``.

Sidecar records — written only after the primary transaction committed, never inside
it: ``HookDispatch`` (one per receipt × admitted hook), ``HookIntent`` (the outbox),
``HookPhaseCheckpoint`` (the hook phase finished for a receipt) and
``IntentExecution`` (a governed executor's recorded decision).

Every identity is a digest of canonical JSON (``hooks.contracts``); uniqueness is enforced
by named database constraints, so replays and races collapse to one row.
"""

from django.db import models
from django.db.models import Q

from hooks.contracts import EVENT_KINDS
from loopx_site.core.model_bases import check, goal_and_agent, unique
from loopx_site.core.models import Goal

EVENT_KIND_CHOICES = [(k, k) for k in EVENT_KINDS]


class CompletionValidator(models.Model):
    """An operator-installed Todo completion validator extension.

    Installed only from the operator's shell (``manage.py todo validator-install --manifest
    FILE --execute``); its argv comes from the manifest (resolved to absolute paths once,
    at install) and is never taken from a request or shown to a host. A Todo names it by
    ``validator_id``; the server runs it at settlement (``hooks.services.validators``).
    """

    validator_id = models.CharField(max_length=64, unique=True)
    version = models.CharField(max_length=64, blank=True, default="")
    description = models.CharField(max_length=500, blank=True, default="")
    entrypoint_argv = models.JSONField(help_text="Absolute argv from the manifest (operator only).")
    timeout_seconds = models.PositiveIntegerField()
    manifest_digest = models.CharField(max_length=71)
    active = models.BooleanField(default=True)
    installed_by = models.CharField(max_length=160, blank=True, default="")
    installed_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["validator_id"]
        constraints = [
            check("timeout", Q(timeout_seconds__gte=1) & Q(timeout_seconds__lte=120)),
        ]

    def __str__(self) -> str:
        return self.validator_id


class Todo(models.Model):
    class State(models.TextChoices):
        OPEN = "open"
        COMPLETED = "completed"

    goal = models.ForeignKey(Goal, on_delete=models.CASCADE, related_name="todos")
    todo_id = models.CharField(max_length=128)
    title = models.CharField(max_length=500, help_text="Owner prose; never leaves in receipts.")
    state = models.CharField(max_length=16, choices=State.choices, default=State.OPEN)
    segment_ref = models.CharField(max_length=256, blank=True, default="")
    revision = models.PositiveIntegerField(default=1)
    replan_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    completed_at = models.DateTimeField(null=True, blank=True)
    validator = models.ForeignKey(
        CompletionValidator,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="todos",
        help_text="The completion validator the operator declared (run at settlement).",
    )

    class Meta:
        ordering = ["goal__goal_id", "todo_id"]
        constraints = [
            unique("goal_todo", "goal", "todo_id"),
            check("state", Q(state__in=["open", "completed"])),
            check("completed_at", Q(state="open") | Q(completed_at__isnull=False)),
        ]
        indexes = [models.Index(fields=["goal", "segment_ref"], name="hooks_todo_segment_idx")]

    def __str__(self) -> str:
        return f"{self.goal.goal_id}/{self.todo_id}"


class TurnSettlement(models.Model):
    """One Turn instance of one Agent settling one Todo event; ``effect_id`` is its plan."""

    goal, agent = goal_and_agent("settlements")
    todo = models.ForeignKey(Todo, on_delete=models.CASCADE, related_name="settlements")
    turn_instance_id = models.CharField(max_length=128)
    event_kind = models.CharField(max_length=32, choices=EVENT_KIND_CHOICES)
    effect_id = models.CharField(max_length=80, unique=True)
    profile = models.CharField(max_length=64, default="default")
    post_writeback_hooks_enabled = models.BooleanField(default=True)
    hook_allowlist = models.JSONField(
        null=True, blank=True, help_text="hook_ids the profile admits; null admits all installed."
    )
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at", "effect_id"]
        constraints = [
            unique("agent_turn", "agent", "turn_instance_id"),
            check("event_kind", Q(event_kind__in=list(EVENT_KINDS))),
        ]

    def __str__(self) -> str:
        return f"{self.agent}/{self.turn_instance_id}"


class DurableWritebackReceipt(models.Model):
    class State(models.TextChoices):
        PREPARED = "prepared"
        COMMITTED = "committed"
        REJECTED = "rejected"

    receipt_id = models.CharField(max_length=80, unique=True)
    settlement = models.ForeignKey(
        TurnSettlement, on_delete=models.CASCADE, related_name="receipts"
    )
    effect_id = models.CharField(max_length=80)
    event_kind = models.CharField(max_length=32, choices=EVENT_KIND_CHOICES)
    state = models.CharField(max_length=16, choices=State.choices)
    state_revision = models.CharField(max_length=64)
    event_facts = models.JSONField(
        default=dict, help_text="Bounded facts snapshotted at commit (segment progress)."
    )
    checkpoint_digest = models.CharField(max_length=80, blank=True, default="")
    committed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at", "receipt_id"]
        constraints = [
            unique("effect", "settlement", "effect_id"),
            check("state", Q(state__in=["prepared", "committed", "rejected"])),
            check("committed", ~Q(state="committed") | Q(committed_at__isnull=False)),
        ]

    def __str__(self) -> str:
        return self.receipt_id


class QuotaSpend(models.Model):
    """The quota spent by one committed primary receipt (its eligibility depends on it only)."""

    spend_id = models.CharField(max_length=80, unique=True)
    receipt = models.OneToOneField(
        DurableWritebackReceipt, on_delete=models.CASCADE, related_name="quota_spend"
    )
    goal, agent = goal_and_agent("quota_spends")
    units = models.PositiveIntegerField(default=1)
    spent_at = models.DateTimeField()

    class Meta:
        ordering = ["-spent_at", "spend_id"]
        constraints = [
            check("units_min", Q(units__gte=1)),
        ]

    def __str__(self) -> str:
        return self.spend_id


class HookDispatch(models.Model):
    """Sidecar dispatch receipt: one admitted hook × one committed primary receipt."""

    class Status(models.TextChoices):
        ACCEPTED = "accepted"
        NOT_APPLICABLE = "not_applicable"
        FAILED = "failed"

    dispatch_id = models.CharField(max_length=80, unique=True)
    receipt = models.ForeignKey(
        DurableWritebackReceipt, on_delete=models.CASCADE, related_name="dispatches"
    )
    goal, agent = goal_and_agent("hook_dispatches")
    hook_id = models.CharField(max_length=140)
    capability_id = models.CharField(max_length=64, blank=True, default="")
    event_kind = models.CharField(max_length=32, choices=EVENT_KIND_CHOICES)
    registration_schema_version = models.CharField(max_length=80)
    registration_digest = models.CharField(max_length=80, blank=True, default="")
    status = models.CharField(max_length=16, choices=Status.choices)
    failure_code = models.CharField(max_length=40, null=True, blank=True)
    failure_reason = models.CharField(max_length=200, blank=True, default="")
    result = models.JSONField(null=True, blank=True)
    result_digest = models.CharField(max_length=80, blank=True, default="")
    intent_count = models.PositiveIntegerField(default=0)
    attempts = models.PositiveIntegerField(default=0, help_text="Provider invocations so far.")
    max_attempts = models.PositiveIntegerField(default=1)
    conflict_count = models.PositiveIntegerField(default=0)
    conflict_code = models.CharField(
        max_length=40,
        null=True,
        blank=True,
        help_text="intent_conflict once a later run proposed a different result (original kept).",
    )
    last_conflict_digest = models.CharField(max_length=80, blank=True, default="")
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at", "dispatch_id"]
        verbose_name_plural = "hook dispatches"
        constraints = [
            check("status", Q(status__in=["accepted", "not_applicable", "failed"])),
            check(
                "failure_code",
                (Q(status="failed") & Q(failure_code__isnull=False))
                | (~Q(status="failed") & Q(failure_code__isnull=True)),
            ),
        ]
        indexes = [
            models.Index(fields=["status", "failure_code"], name="hooks_dispatch_status_idx"),
            models.Index(fields=["conflict_code"], name="hooks_dispatch_conflict_idx"),
            models.Index(fields=["goal", "created_at"], name="hooks_dispatch_goal_idx"),
        ]

    def __str__(self) -> str:
        return self.dispatch_id


class HookIntent(models.Model):
    """Outbox row: a validated typed intent proposal; no authority, no effect performed."""

    class Status(models.TextChoices):
        PENDING = "pending"
        ADMITTED = "admitted"
        REJECTED = "rejected"
        EXECUTED = "executed"

    intent_id = models.CharField(max_length=80, unique=True)
    dispatch = models.ForeignKey(HookDispatch, on_delete=models.CASCADE, related_name="intents")
    goal, agent = goal_and_agent("hook_intents")
    position = models.PositiveSmallIntegerField(default=0)
    hook_id = models.CharField(max_length=140)
    capability_id = models.CharField(max_length=64)
    intent_kind = models.CharField(max_length=140)
    operation = models.CharField(max_length=64)
    policy_version = models.CharField(max_length=64)
    payload = models.JSONField()
    budget = models.JSONField()
    requested_write_scope = models.JSONField(default=list)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    status_reason = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["created_at", "dispatch_id", "position"]
        constraints = [
            check("status", Q(status__in=["pending", "admitted", "rejected", "executed"])),
            unique("position", "dispatch", "position"),
        ]
        indexes = [models.Index(fields=["status", "created_at"], name="hooks_intent_status_idx")]

    def __str__(self) -> str:
        return self.intent_id


class HookPhaseCheckpoint(models.Model):
    """The hook phase of one committed receipt ran to the end (replay skips it)."""

    receipt = models.OneToOneField(
        DurableWritebackReceipt, on_delete=models.CASCADE, related_name="hook_checkpoint"
    )
    registry_digest = models.CharField(max_length=80)
    dispatch_ids = models.JSONField(default=list)
    completed_at = models.DateTimeField()

    class Meta:
        ordering = ["-completed_at"]

    def __str__(self) -> str:
        return f"checkpoint:{self.receipt.receipt_id}"


class IntentExecution(models.Model):
    """A governed executor's recorded decision for one intent (dedupe on intent)."""

    class Admission(models.TextChoices):
        ADMITTED = "admitted"
        REJECTED = "rejected"

    intent = models.ForeignKey(HookIntent, on_delete=models.CASCADE, related_name="executions")
    executor_id = models.CharField(max_length=64)
    admission = models.CharField(max_length=16, choices=Admission.choices)
    reason = models.CharField(max_length=64, blank=True, default="")
    decision = models.JSONField(null=True, blank=True)
    decision_digest = models.CharField(max_length=80, blank=True, default="")
    recorded_at = models.DateTimeField()

    class Meta:
        ordering = ["-recorded_at"]
        constraints = [
            unique("executor_intent", "executor_id", "intent"),
            check("admission", Q(admission__in=["admitted", "rejected"])),
        ]

    def __str__(self) -> str:
        return f"{self.executor_id}:{self.intent.intent_id}"


class HookRegistration(models.Model):
    """Read-only admin view of installed registrations (no table; built from settings)."""

    hook_id = models.CharField(max_length=140, primary_key=True)

    class Meta:
        managed = False
        verbose_name = "installed hook registration"
        default_permissions = ("view",)

    def __str__(self) -> str:
        return self.hook_id
