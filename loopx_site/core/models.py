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


class SearchDocument(models.Model):
    """One document of the shared full-text index (see ``loopx_site.core.fulltext``).

    Rows are written only through ``fulltext.index``/``fulltext.remove``; the SQLite FTS5
    table and the PostgreSQL GIN expression index are created by migration 0002.
    """

    namespace = models.CharField(max_length=200)
    namespace_key = models.CharField(max_length=32, help_text="FTS token of the namespace.")
    ref = models.CharField(max_length=255)
    body = models.TextField()
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["namespace", "ref"], name="core_searchdocument_namespace_ref_uniq"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.namespace}:{self.ref}"
