"""The one table of turn recall: a compact receipt per (Goal, Agent, turn recall id).

The receipt keeps only what reproduces the turn's guidance — status, bounded guidance
items (candidate ref, class, summary, applicability, expiry), digests and counts. It
never stores the query, provider payloads, provider commands or credentials.
"""

from django.db import models
from django.db.models import Q

from loopx_site.core.model_bases import check, unique
from turn_recall import contracts

RECEIPT_STATUSES = (contracts.APPLIED, contracts.EMPTY, contracts.DEGRADED)


class TurnRecallReceipt(models.Model):
    goal_digest = models.CharField(max_length=71, help_text="sha256 of the goal id.")
    agent_digest = models.CharField(max_length=71, help_text="sha256 of (goal id, agent id).")
    turn_recall_id = models.CharField(max_length=67)
    goal_id = models.CharField(max_length=128, db_index=True)
    agent_id = models.CharField(max_length=128)
    situation_fingerprint = models.CharField(max_length=71)
    turn_instance_digest = models.CharField(max_length=71)
    status = models.CharField(max_length=16, choices=[(s, s) for s in RECEIPT_STATUSES])
    reason_code = models.CharField(max_length=64, blank=True, default="")
    corpus_id = models.CharField(max_length=128, blank=True, default="")
    guidance = models.JSONField(
        default=list, help_text="Private: compact guidance items reproduced on replay."
    )
    guidance_count = models.PositiveSmallIntegerField(default=0)
    provider_call_count = models.PositiveSmallIntegerField(default=0)
    reconciliation = models.JSONField(default=dict, help_text="Counts only.")
    observed_at = models.DateTimeField()
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at", "turn_recall_id"]
        constraints = [
            unique("scope_recall", "goal_digest", "agent_digest", "turn_recall_id"),
            check("status", Q(status__in=list(RECEIPT_STATUSES))),
        ]
        indexes = [
            models.Index(fields=["goal_id", "agent_id", "created_at"], name="turn_recall_scope_idx")
        ]

    def __str__(self) -> str:
        return self.turn_recall_id
