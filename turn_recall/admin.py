"""Operators see turn recall receipts read-only; list columns carry no private text
(guidance summaries appear only on the detail page)."""

from django.contrib import admin

from loopx_site.core.admin_base import ReadOnlyAdmin, ref_column
from turn_recall.models import TurnRecallReceipt


@admin.register(TurnRecallReceipt)
class TurnRecallReceiptAdmin(ReadOnlyAdmin):
    list_display = (
        ref_column("turn_recall_id"),
        "goal_id",
        "agent_id",
        "status",
        "reason_code",
        "guidance_count",
        "provider_call_count",
        "created_at",
    )
    list_filter = ("status", "reason_code")
    search_fields = ("turn_recall_id", "goal_id", "agent_id", "situation_fingerprint")
    readonly_fields = (
        "turn_recall_id",
        "goal_id",
        "agent_id",
        "goal_digest",
        "agent_digest",
        "situation_fingerprint",
        "turn_instance_digest",
        "status",
        "reason_code",
        "corpus_id",
        "guidance",
        "guidance_count",
        "provider_call_count",
        "reconciliation",
        "observed_at",
        "created_at",
    )
