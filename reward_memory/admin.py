"""Operator pages: corpora with a health column, records with lifecycle filters, and
read-only candidates, reviews, ingest receipts, sidecars, recall and application
receipts. Operator edit/retire actions arrive with operator-control; the only action
here (retry pending ingests) calls a service."""

from django.contrib import admin, messages

from loopx_site.core.admin_base import ReadOnlyAdmin, ReadOnlyTabularInline
from loopx_site.core.errors import DomainError
from reward_memory import selectors, services
from reward_memory.models import (
    ApplicationReceipt,
    Candidate,
    Corpus,
    IngestEvent,
    MemoryRecord,
    PendingIngest,
    RecallReceipt,
    RecordTransition,
    Review,
    StandingPolicy,
)


class StandingPolicyInline(ReadOnlyTabularInline):
    model = StandingPolicy
    fields = ("surface", "policy_digest", "active", "created_at", "retired_at")
    readonly_fields = fields


@admin.register(Corpus)
class CorpusAdmin(ReadOnlyAdmin):
    list_display = (
        "corpus_id",
        "memory_class",
        "project",
        "owner",
        "provider_id",
        "revision",
        "active_records",
        "health",
    )
    list_filter = ("memory_class", "provider_id", "active")
    search_fields = ("corpus_id", "project", "owner", "reviewer")
    exclude = ("provider_scope_ref",)
    readonly_fields = (
        "corpus_id",
        "memory_class",
        "owner",
        "reviewer",
        "authority_source",
        "retirement_authority",
        "project",
        "surfaces",
        "freshness_policy",
        "privacy",
        "provider_id",
        "provider_binding_ref",
        "agent_allowlist",
        "definition_digest",
        "revision",
        "active",
        "created_at",
        "updated_at",
    )
    inlines = [StandingPolicyInline]

    @admin.display(description="active records")
    def active_records(self, obj):
        return selectors.live_records(obj).count()

    @admin.display(description="health (separate states)")
    def health(self, obj):
        return selectors.health_summary(selectors.corpus_health(obj))


@admin.register(StandingPolicy)
class StandingPolicyAdmin(ReadOnlyAdmin):
    list_display = ("corpus", "surface", "policy_digest", "active", "created_at")
    list_filter = ("active", "corpus")
    search_fields = ("policy_digest", "surface", "corpus__corpus_id")
    readonly_fields = ("corpus", "surface", "policy_digest", "document", "active", "created_at")


class TransitionInline(ReadOnlyTabularInline):
    model = RecordTransition
    fields = ("seq", "from_state", "to_state", "reason", "actor", "reference", "at")
    readonly_fields = fields


@admin.register(MemoryRecord)
class MemoryRecordAdmin(ReadOnlyAdmin):
    list_display = (
        "record_ref",
        "corpus",
        "memory_class",
        "surface",
        "lifecycle_state",
        "confidence_level",
        "expires_at",
        "activated_at",
    )
    list_filter = ("lifecycle_state", "memory_class", "activation_basis", "corpus")
    search_fields = ("record_ref", "candidate_ref", "surface", "project", "summary")
    exclude = ("provider_resource_ref",)
    readonly_fields = (
        "record_ref",
        "corpus",
        "candidate_ref",
        "memory_class",
        "project",
        "surface",
        "summary",
        "content",
        "content_digest",
        "activation_basis",
        "policy_digest",
        "review",
        "writer",
        "source_kind",
        "source_actor",
        "observed_at",
        "confidence_level",
        "authority",
        "lifecycle_state",
        "expires_at",
        "superseded_by",
        "revocation",
        "retirement",
        "provider_id",
        "provider_ref_digest",
        "readback_verified_at",
        "created_at",
        "activated_at",
        "state_changed_at",
    )
    inlines = [TransitionInline]


@admin.register(Candidate)
class CandidateAdmin(ReadOnlyAdmin):
    list_display = ("candidate_ref", "corpus", "target_class", "surface", "guard_status")
    list_filter = ("guard_status", "target_class", "corpus")
    search_fields = ("candidate_ref", "prior_candidate_ref", "surface", "project")
    readonly_fields = (
        "candidate_ref",
        "corpus",
        "target_class",
        "project",
        "surface",
        "document",
        "guard_status",
        "guard_reasons",
        "prior_candidate_ref",
        "created_at",
    )


@admin.register(Review)
class ReviewAdmin(ReadOnlyAdmin):
    list_display = (
        "review_id",
        "corpus",
        "requested_decision",
        "effective_decision",
        "guard_status",
        "reviewer",
        "applied_at",
    )
    list_filter = ("effective_decision", "requested_decision", "guard_status", "corpus")
    search_fields = ("review_id", "candidate__candidate_ref", "reviewer", "target_record_ref")
    readonly_fields = (
        "review_id",
        "corpus",
        "candidate",
        "requested_decision",
        "effective_decision",
        "reviewer",
        "guard_status",
        "target_record_ref",
        "revised_candidate_ref",
        "document",
        "created_at",
        "applied_at",
        "applied_record_ref",
    )


@admin.register(IngestEvent)
class IngestEventAdmin(ReadOnlyAdmin):
    list_display = ("event_ref", "goal", "agent", "corpus", "status", "observed_at", "attempts")
    list_filter = ("status", "adapter", "corpus")
    search_fields = ("event_ref", "candidate_ref", "goal__goal_id", "agent__agent_id")
    readonly_fields = (
        "event_ref",
        "goal",
        "agent",
        "corpus",
        "adapter",
        "candidate_ref",
        "record",
        "status",
        "observed_at",
        "event",
        "receipt",
        "attempts",
        "created_at",
        "updated_at",
    )


@admin.register(PendingIngest)
class PendingIngestAdmin(ReadOnlyAdmin):
    list_display = (
        "event",
        "goal",
        "agent",
        "reason",
        "attempts",
        "last_attempt_at",
        "resolved_at",
    )
    list_filter = ("reason", ("resolved_at", admin.EmptyFieldListFilter))
    search_fields = ("event__event_ref", "goal__goal_id", "agent__agent_id")
    readonly_fields = (
        "event",
        "goal",
        "agent",
        "reason",
        "attempts",
        "created_at",
        "last_attempt_at",
        "resolved_at",
    )
    actions = ["retry"]

    def has_change_permission(self, request, obj=None):
        # Needed to offer the retry action; every field stays read-only.
        return obj is None and request.user.has_perm("reward_memory.change_pendingingest")

    @admin.action(description="Retry pending ingests of the selected rows' Agents")
    def retry(self, request, queryset):
        agents = {
            (p.goal.goal_id, p.agent.agent_id) for p in queryset.select_related("goal", "agent")
        }
        for goal_id, agent_id in sorted(agents):
            try:
                summary = services.reconcile_pending_ingests(goal_id=goal_id, agent_id=agent_id)
            except DomainError as exc:
                self.message_user(request, f"{goal_id}/{agent_id}: {exc.code}", messages.ERROR)
                continue
            self.message_user(
                request,
                f"{goal_id}/{agent_id}: {summary['activated']} activated, "
                f"{summary['still_pending']} still pending, {summary['blocked']} blocked.",
                messages.SUCCESS,
            )


@admin.register(RecallReceipt)
class RecallReceiptAdmin(ReadOnlyAdmin):
    list_display = ("recall_id", "corpus", "surface", "mode", "status", "query_count", "created_at")
    list_filter = ("status", "mode", "corpus")
    search_fields = ("recall_id", "surface", "goal__goal_id", "agent__agent_id")
    readonly_fields = (
        "recall_id",
        "corpus",
        "goal",
        "agent",
        "surface",
        "mode",
        "status",
        "query_count",
        "result_refs",
        "packet",
        "provider_calls",
        "created_at",
    )


@admin.register(ApplicationReceipt)
class ApplicationReceiptAdmin(ReadOnlyAdmin):
    list_display = ("application_receipt_id", "corpus", "decision", "status", "created_at")
    list_filter = ("status", "decision", "corpus")
    search_fields = ("application_receipt_id", "recall__recall_id")
    readonly_fields = (
        "application_receipt_id",
        "recall",
        "corpus",
        "decision",
        "status",
        "receipt",
        "created_at",
    )
