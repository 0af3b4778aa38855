"""The Goal/Agent registry and host tokens.

An Agent belongs to exactly one Goal; the same agent name in two Goals is two Agents.
The durable runtime identity is ``(goal_id, agent_id)``.
"""

from django.db import models


class Goal(models.Model):
    goal_id = models.CharField(max_length=128, unique=True)
    state_ref = models.CharField(
        max_length=1024,
        default="",
        blank=True,
        help_text="Opaque reference to the Goal's state; part of every preference scope.",
    )
    instance_id = models.CharField(max_length=128, default="", blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["goal_id"]
        permissions = [
            (
                "operate_api",
                "Can use the API as an operator (every Goal; registry writes)",
            ),
            ("erase_goal", "Can erase a Goal's memory (goal erase)"),
        ]

    def __str__(self) -> str:
        return self.goal_id


class Agent(models.Model):
    goal = models.ForeignKey(Goal, on_delete=models.CASCADE, related_name="agents")
    agent_id = models.CharField(max_length=128)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["goal__goal_id", "agent_id"]
        constraints = [
            models.UniqueConstraint(fields=["goal", "agent_id"], name="core_agent_goal_agent_uniq"),
        ]

    def __str__(self) -> str:
        return f"{self.goal.goal_id}/{self.agent_id}"


class HostToken(models.Model):
    """An API credential for one host, scoped to one Goal and optionally one Agent.

    Only the sha256 of the secret is stored; the secret is shown once at creation.
    """

    key_digest = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=16, help_text="First characters, to recognise it.")
    goal = models.ForeignKey(Goal, on_delete=models.CASCADE, related_name="tokens")
    agent = models.ForeignKey(
        Agent, on_delete=models.CASCADE, null=True, blank=True, related_name="tokens"
    )
    label = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        scope = self.goal.goal_id + (f"/{self.agent.agent_id}" if self.agent_id else "")
        return f"{self.prefix}… ({scope})"


class SearchNamespace(models.Model):
    """Collection statistics of one full-text namespace (see ``loopx_site.engines.fulltext``).

    Every write to the namespace locks this row first, so writers of one namespace
    serialise and the statistics, slots and posting blocks stay consistent.
    """

    name = models.CharField(max_length=200)
    documents = models.BigIntegerField(default=0, help_text="N: documents in the namespace.")
    tokens = models.BigIntegerField(default=0, help_text="Sum of the documents' lengths.")
    next_slot = models.BigIntegerField(default=0, help_text="Next dense document number.")
    revision = models.BigIntegerField(
        default=0, help_text="Random after every write: names this state of the namespace."
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["name"], name="core_searchnamespace_name_uniq"),
        ]

    def __str__(self) -> str:
        return self.name


class SearchDocument(models.Model):
    """One document of the shared full-text index (see ``loopx_site.engines.fulltext``).

    Rows are written only through ``fulltext.index``/``index_many``/``remove``; ``slot``
    numbers the document densely inside its namespace (never reused) and ``length`` is
    its token count.
    """

    namespace = models.CharField(max_length=200)
    ref = models.CharField(max_length=255)
    body = models.TextField()
    slot = models.BigIntegerField(default=0)
    length = models.IntegerField(default=0)
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["namespace", "ref"], name="core_searchdocument_namespace_ref_uniq"
            ),
            models.UniqueConstraint(
                fields=["namespace", "slot"], name="core_searchdocument_namespace_slot_uniq"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.namespace}:{self.ref}"


class SearchPostingBlock(models.Model):
    """The postings of one term for one range of ``BUCKET`` slots of a namespace.

    ``data`` packs ``count`` postings (slot, term frequency, document length), slots
    ascending, in one of the formats of ``loopx_site.engines.fulltext._encode``. ``max_tf``
    and ``min_dl`` bound what any posting of the block can score (BM25 grows with tf and
    falls with dl); a search reads them (through the covering index
    ``core_searchpostingblock_bounds``, never the blobs) to decide which posting lists
    it must read at all.
    """

    namespace = models.ForeignKey(SearchNamespace, on_delete=models.CASCADE, related_name="+")
    term = models.CharField(max_length=64)
    bucket = models.BigIntegerField()
    count = models.IntegerField()
    max_tf = models.IntegerField(default=0, help_text="Largest term frequency in the block.")
    min_dl = models.IntegerField(default=0, help_text="Smallest document length in the block.")
    data = models.BinaryField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["namespace", "term", "bucket"],
                name="core_searchpostingblock_ns_term_bucket_uniq",
            ),
        ]
        indexes = [  # covering: a term's df and bounds without touching its blobs
            models.Index(
                fields=["namespace", "term", "count", "max_tf", "min_dl"],
                name="core_searchpostingblock_bounds",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.term}@{self.bucket}"


class ThrottleCounter(models.Model):
    """The embedded throttle store: one row per (scope, credential) with the calls counted
    in its current window. Every server process shares it through the database, and one
    atomic upsert (``INSERT … ON CONFLICT DO UPDATE … RETURNING``) counts each call, so the
    total admitted is exact across processes (``loopx_site.core.api.throttles``)."""

    bucket = models.CharField(max_length=200, unique=True)  # "<scope>:<credential>"
    window_end = models.FloatField()  # epoch seconds; the window opened with its first call
    hits = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name = "throttle counter"

    def __str__(self) -> str:
        return f"{self.bucket}: {self.hits}"


class BackgroundRun(models.Model):
    """What one run of a background task did (``loopx_site.core.background``).

    Counts only (rows claimed, skipped, written …), the outcome and an error *code*, the
    worker that ran it: never a summary, a path or a token.
    """

    class Outcome(models.TextChoices):
        RUNNING = "running"
        OK = "ok"
        FAILED = "failed"

    task = models.CharField(max_length=128, help_text="The task's stable name.")
    task_id = models.CharField(
        max_length=64, blank=True, default="", help_text="Celery's id of the run (blank: eager)."
    )
    worker = models.CharField(max_length=255, help_text="host:pid of the process that ran it.")
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=16, choices=Outcome.choices, default=Outcome.RUNNING)
    error_code = models.CharField(max_length=64, blank=True, default="")
    counts = models.JSONField(default=dict, help_text="What the run did, as numbers.")

    class Meta:
        ordering = ["-started_at", "-pk"]
        indexes = [models.Index(fields=["task", "-started_at"], name="core_bgrun_task_idx")]

    def __str__(self) -> str:
        return f"{self.task} {self.outcome} @ {self.started_at:%Y-%m-%d %H:%M:%S}"
