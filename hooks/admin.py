"""Operator views of the settlement seam and the hook sidecar.

Receipts, dispatches, checkpoints and executions are immutable journal rows. Outbox
intents are admitted or rejected only through the governed executor service.
"""

import json

from django import forms
from django.contrib import admin, messages
from django.template.response import TemplateResponse
from django.utils.html import format_html

from hooks import documents, selectors, services
from hooks.errors import FAILURE_CODES, HookError
from hooks.models import (
    CompletionValidator,
    DurableWritebackReceipt,
    HookDispatch,
    HookIntent,
    HookPhaseCheckpoint,
    HookRegistration,
    IntentExecution,
    QuotaSpend,
    Todo,
    TurnSettlement,
)
from loopx_site.core.access import signed_in
from loopx_site.core.admin_base import (
    ReadOnlyAdmin,
    ReadOnlyTabularInline,
    admin_link,
    fields_then,
    log_admin_action,
    ref_column,
)

DEFAULT_EXECUTOR = "fake-scheduler"
#: What the operator reads for the executor (its id is an internal name).
EXECUTOR_LABEL = "the governed executor (records the decision; no external effect)"


def _pretty(value) -> str:
    return format_html("<pre>{}</pre>", json.dumps(value, indent=2, sort_keys=True))


def _json_display(field: str, description: str):
    """A read-only detail field showing the raw JSON ``field`` indented."""

    @admin.display(description=description)
    def show(self, obj):
        return _pretty(getattr(obj, field))

    return show


class TodoAddForm(forms.ModelForm):
    """An operator adds a Todo (and declares its completion validator) through
    ``services.add_todo``; the form's clean runs the service's preview checks."""

    class Meta:
        model = Todo
        fields = ("goal", "todo_id", "title", "segment_ref", "validator")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["validator"].queryset = CompletionValidator.objects.filter(active=True)

    def _post_clean(self):  # the service, not the model, decides
        pass

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        try:
            services.add_todo(**self.service_arguments(data), execute=False)
        except HookError as exc:
            raise forms.ValidationError(exc.message) from None
        return data

    @staticmethod
    def service_arguments(data) -> dict:
        return {
            "goal_id": data["goal"].goal_id,
            "todo_id": data["todo_id"],
            "title": data["title"],
            "segment_ref": data.get("segment_ref") or None,
            "validator": data["validator"].validator_id if data.get("validator") else None,
        }


@admin.register(Todo)
class TodoAdmin(admin.ModelAdmin):
    list_display = (
        "todo_id", "goal", "state", "segment_ref", "validator", "revision", "updated_at"
    )  # fmt: skip
    list_filter = ("state", "goal", "validator")
    search_fields = ("todo_id", "segment_ref", "goal__goal_id")
    add_form = TodoAddForm

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = TodoAddForm
        return super().get_form(request, obj, **kwargs)

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in Todo._meta.fields] if obj is not None else []

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        result = services.add_todo(**TodoAddForm.service_arguments(form.cleaned_data), execute=True)
        for field in Todo._meta.concrete_fields:  # the admin's log and redirect use obj
            setattr(obj, field.attname, getattr(result.todo, field.attname))


@admin.register(CompletionValidator)
class CompletionValidatorAdmin(ReadOnlyAdmin):
    """Installed from the operator's shell only (``todo validator-install``)."""

    list_display = ("validator_id", "version", "active", "timeout_seconds", "updated_at")
    list_filter = ("active",)
    search_fields = ("validator_id",)
    readonly_fields = [f.name for f in CompletionValidator._meta.fields]


class ReceiptInline(ReadOnlyTabularInline):
    model = DurableWritebackReceipt
    fields = ("receipt_id", "state", "state_revision", "committed_at")
    readonly_fields = fields


@admin.register(TurnSettlement)
class TurnSettlementAdmin(ReadOnlyAdmin):
    list_display = (
        "turn_instance_id",
        "agent",
        "todo",
        "event_kind",
        "post_writeback_hooks_enabled",
        "created_at",
    )
    list_filter = ("event_kind", "post_writeback_hooks_enabled", "profile", "goal")
    search_fields = ("turn_instance_id", "effect_id", "agent__agent_id", "todo__todo_id")
    readonly_fields = [f.name for f in TurnSettlement._meta.fields]
    inlines = [ReceiptInline]


@admin.register(DurableWritebackReceipt)
class DurableWritebackReceiptAdmin(ReadOnlyAdmin):
    list_display = (
        ref_column("receipt_id"),
        "event_kind",
        "state",
        "state_revision",
        "committed_at",
    )
    list_filter = ("state", "event_kind")
    search_fields = ("receipt_id", "effect_id", "settlement__turn_instance_id")
    readonly_fields = [f.name for f in DurableWritebackReceipt._meta.fields]


@admin.register(QuotaSpend)
class QuotaSpendAdmin(ReadOnlyAdmin):
    list_display = (ref_column("spend_id"), "goal", "agent", "units", "spent_at")
    list_filter = ("goal",)
    search_fields = ("spend_id", "receipt__receipt_id", "agent__agent_id")
    readonly_fields = [f.name for f in QuotaSpend._meta.fields]


class FailureCodeFilter(admin.SimpleListFilter):
    title = "failure code"
    parameter_name = "failure_code"

    def lookups(self, request, model_admin):
        return [(c, c) for c in FAILURE_CODES]

    def queryset(self, request, queryset):
        if not self.value():
            return queryset
        return queryset.filter(selectors.failure_code_q(self.value()))


@admin.register(HookDispatch)
class HookDispatchAdmin(ReadOnlyAdmin):
    list_display = (
        ref_column("dispatch_id"),
        "hook_id",
        "status",
        "failure_code",
        "created_at",
        "attempts",
        "intent_count",
        "conflict_code",  # (conflict count: on the detail page)
    )
    list_filter = ("status", FailureCodeFilter, "hook_id", "event_kind")
    search_fields = ("dispatch_id", "hook_id", "receipt__receipt_id")
    exclude = ("result",)
    readonly_fields = (
        "next_step",
        *fields_then(HookDispatch, "validated_result", without="result"),
    )
    validated_result = _json_display("result", "validated result")
    actions = ["replay_selected"]

    def has_change_permission(self, request, obj=None):
        # The replay action needs it; a dispatch row is never edited.
        return obj is None and request.user.has_perm("hooks.change_hookdispatch")

    @admin.display(description="next step")
    def next_step(self, obj):
        if obj.status != HookDispatch.Status.FAILED:
            return "none: this dispatch did not fail"
        return format_html(
            "Replay it: select it in the dispatch list and run “Replay the hook phase of the "
            "selected failed dispatches”, or <code>python manage.py hooks replay --receipt-id "
            "{} --execute</code>.",
            obj.receipt.receipt_id,
        )

    @staticmethod
    def _may_replay(request) -> bool:
        """Only an account the service would let replay is told "nothing to replay"
        (anyone else gets the service's refusal)."""
        return request.user.has_perm("hooks.change_hookdispatch")

    @admin.action(
        description="Replay the hook phase of the selected failed dispatches",
        permissions=["change"],
    )
    def replay_selected(self, request, queryset):
        for dispatch in queryset.select_related("receipt"):
            if dispatch.status != HookDispatch.Status.FAILED and self._may_replay(request):
                self.message_user(
                    request, f"{dispatch.dispatch_id}: not failed, nothing to replay.",
                    messages.WARNING,
                )  # fmt: skip
                continue
            try:
                services.replay(
                    receipt_id=dispatch.receipt.receipt_id,
                    execute=True,
                    operator=signed_in(request),
                )
            except HookError as exc:
                self.message_user(request, f"{dispatch.dispatch_id}: {exc.code}", messages.ERROR)
                continue
            dispatch.refresh_from_db()
            log_admin_action(request, dispatch, f"replayed: now {dispatch.status}")
            now = dispatch.status + (f" ({dispatch.failure_code})" if dispatch.failure_code else "")
            self.message_user(
                request,
                format_html(
                    "{}: replayed; the dispatch is now {} after {} attempt(s).",
                    admin_link(dispatch, dispatch.dispatch_id),
                    now,
                    dispatch.attempts,
                ),
                messages.SUCCESS if dispatch.status != "failed" else messages.WARNING,
            )


@admin.register(HookIntent)
class HookIntentAdmin(ReadOnlyAdmin):
    list_display = (
        ref_column("intent_id"),
        "intent_kind",
        "operation",
        "policy_version",
        "status",
        "goal",
        "created_at",
    )
    list_filter = ("status", "intent_kind", "policy_version", "goal")
    search_fields = ("intent_id", "dispatch__dispatch_id", "intent_kind")
    exclude = ("payload",)
    readonly_fields = fields_then(HookIntent, "payload_json", without="payload")
    actions = ["admit_selected", "reject_selected"]
    payload_json = _json_display("payload", "payload")

    def has_change_permission(self, request, obj=None):
        # The changelist actions need it; a single intent is never edited.
        return obj is None and request.user.has_perm("hooks.change_hookintent")

    def _apply(self, request, queryset, action: str):
        ids = list(queryset.values_list("intent_id", flat=True))
        try:
            if action == "admit":
                results = services.admit_intents(
                    executor=DEFAULT_EXECUTOR, intent_ids=ids, operator=signed_in(request)
                )
            else:
                results = services.reject_intents(
                    executor=DEFAULT_EXECUTOR, intent_ids=ids, operator=signed_in(request)
                )
        except HookError as exc:
            self.message_user(request, f"{exc.code}: {exc.message}", messages.ERROR)
            return
        counts: dict[str, int] = {}
        for item in results:
            key = item["action"] + (f" ({item['reason']})" if item["reason"] else "")
            counts[key] = counts.get(key, 0) + 1
        summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "nothing"
        for intent in queryset:
            log_admin_action(request, intent)
        self.message_user(request, f"Through {EXECUTOR_LABEL}: {summary}.", messages.SUCCESS)

    @admin.action(description="Admit the selected intents", permissions=["change"])
    def admit_selected(self, request, queryset):
        self._apply(request, queryset, "admit")

    @admin.action(description="Reject the selected intents", permissions=["change"])
    def reject_selected(self, request, queryset):
        self._apply(request, queryset, "reject")


@admin.register(HookPhaseCheckpoint)
class HookPhaseCheckpointAdmin(ReadOnlyAdmin):
    list_display = (
        ref_column("receipt__receipt_id"),
        ref_column("registry_digest"),
        "completed_at",
    )
    search_fields = ("receipt__receipt_id",)
    readonly_fields = [f.name for f in HookPhaseCheckpoint._meta.fields]


@admin.register(IntentExecution)
class IntentExecutionAdmin(ReadOnlyAdmin):
    list_display = ("intent", "executor_id", "admission", "reason", "recorded_at")
    list_filter = ("executor_id", "admission")
    search_fields = ("intent__intent_id",)
    exclude = ("decision",)
    readonly_fields = fields_then(IntentExecution, "decision_json", without="decision")
    decision_json = _json_display("decision", "decision")


@admin.register(HookRegistration)
class HookRegistrationAdmin(admin.ModelAdmin):
    """Read-only list of installed registrations, built from the composition root."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def has_view_permission(self, request, obj=None):
        return bool(request.user.is_active and request.user.is_staff)

    def has_module_permission(self, request):
        return self.has_view_permission(request)

    def changelist_view(self, request, extra_context=None):
        payload = documents.registration_list(selectors.registrations(operator=True))
        rows = [
            {**item, "registration_json": json.dumps(item["registration"], indent=2)}
            for item in payload["registrations"]
        ]
        context = {
            **self.admin_site.each_context(request),
            "title": "Installed post-writeback hook registrations",
            "opts": self.model._meta,
            "payload": payload,
            "rows": rows,
        }
        return TemplateResponse(request, "admin/hooks/registrations.html", context)
