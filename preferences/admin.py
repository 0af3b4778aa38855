"""Operators see scopes, current subjects and the journal (read-only). "Retire" and
"correct" go through the same services as the CLI and API, with an operator source and
the revision the operator saw on the form — the admin never edits journal rows in place
and never retries with a newly fetched revision."""

import json

from django import forms
from django.contrib import admin, messages
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.formats import date_format
from django.utils.html import format_html, format_html_join

from loopx_site.core import access
from loopx_site.core import selectors as core_selectors
from loopx_site.core.admin_base import (
    ReadOnlyAdmin,
    ReadOnlyTabularInline,
    admin_link,
    excerpt_column,
    log_admin_action,
)
from loopx_site.core.canonical import sha256_hex
from loopx_site.core.errors import DomainError
from preferences import (
    admin_recall,  # noqa: F401 - registers the recall hook's admin
    selectors,
    services,
)
from preferences.models import PreferenceOperation, PreferenceScope, PreferenceSubject


class SubjectInline(ReadOnlyTabularInline):
    model = PreferenceSubject
    fields = ("key", "state", "statement", "revision", "expires_at", "updated_at")
    readonly_fields = fields
    show_change_link = True


class JournalInline(ReadOnlyTabularInline):
    model = PreferenceOperation
    fields = (
        "sequence",
        "kind",
        "key",
        "operation_id",
        "statement",
        "source_ref",
        "predecessor_operation_id",
        "created_at",
    )
    readonly_fields = fields
    ordering = ("sequence",)


class LiveScopeFilter(admin.SimpleListFilter):
    """Live: the scope the Goal points to now (its current state_ref and instance);
    earlier: scopes kept for their history after a state_ref or instance move."""

    title = "scope"
    parameter_name = "live"
    prefix = ""

    def lookups(self, request, model_admin):
        return [("yes", "live"), ("no", "earlier")]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(core_selectors.live_scope_q(self.prefix))
        if self.value() == "no":
            return queryset.exclude(core_selectors.live_scope_q(self.prefix))
        return queryset


class SubjectLiveScopeFilter(LiveScopeFilter):
    prefix = "scope__"


@admin.register(PreferenceScope)
class PreferenceScopeAdmin(ReadOnlyAdmin):
    list_display = (
        "goal_ref",
        "agent_ref",
        "live",
        "state_ref",
        "instance_id",
        "revision",
        "subject_count",
        "runtime_id",
        "journal_started_at",
    )
    list_filter = (
        LiveScopeFilter,
        "goal",
        "runtime_id",
        ("revision", admin.EmptyFieldListFilter),
    )
    search_fields = ("goal_ref", "agent_ref", "subjects__key")
    readonly_fields = (
        "scope_key",
        "runtime_id",
        "goal",
        "agent",
        "state_ref",
        "instance_id",
        "revision",
        "journal_started_at",
        "migrated_from",
        "created_at",
    )
    exclude = ("goal_ref", "agent_ref")
    inlines = [SubjectInline, JournalInline]

    def get_queryset(self, request):
        return selectors.with_live_marker(super().get_queryset(request).select_related("goal"))

    @admin.display(description="subjects", ordering="subject_count")
    def subject_count(self, obj):
        return obj.subject_count  # kept under the scope lock with the revision

    @admin.display(description="live", boolean=True, ordering="is_live")
    def live(self, obj):
        return obj.is_live

    def has_view_permission(self, request, obj=None):
        return request.user.has_perm("preferences.view_preferencescope")


class OperatorSourceForm(forms.Form):
    source_ref = forms.CharField(max_length=1024, help_text="Where the owner asked for this.")
    source_quote = forms.CharField(
        max_length=1600,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="The owner's exact words.",
    )


class CorrectionForm(OperatorSourceForm):
    statement = forms.CharField(
        max_length=1200,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="The corrected preference.",
    )


@admin.register(PreferenceSubject)
class PreferenceSubjectAdmin(admin.ModelAdmin):
    list_display = (
        "key",
        excerpt_column("statement"),
        "state",
        "live_scope",
        "revision",
        "scope",
        "updated_at",  # (expires at: a filter here, a field on the detail page)
    )
    list_filter = (
        SubjectLiveScopeFilter,
        "state",
        "scope__goal",
        ("expires_at", admin.EmptyFieldListFilter),
    )
    search_fields = ("key", "scope__goal_ref", "scope__agent_ref")
    # The detail page leads with the statement and what identifies it, then a readable
    # history; the stored wire document stays available, collapsed, at the end.
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "current_statement",
                    "key",
                    "state",
                    "revision",
                    "scope",
                    "source_ref",
                    "expires_at",
                    "updated_at",
                    "next_step",
                )
            },
        ),
        ("History", {"fields": ("history",)}),
        (
            "Stored document",
            {
                "classes": ("collapse",),
                "description": "The item exactly as the journal stores and hosts read it.",
                "fields": ("stored_item", "stored_size"),
            },
        ),
    )
    readonly_fields = (
        "current_statement",
        "scope",
        "key",
        "state",
        "source_ref",
        "expires_at",
        "revision",
        "updated_at",
        "next_step",
        "history",
        "stored_item",
        "stored_size",
    )
    actions = ["retire_selected", "correct_selected"]

    @admin.display(description="statement")
    def current_statement(self, obj):
        if obj.statement is None:
            return "— (no statement: this preference is retired)"
        return format_html('<span class="lx-statement">{}</span>', obj.statement)

    @admin.display(description="next step")
    def next_step(self, obj):
        if obj.state != "active":
            return "none: a retired preference comes back when the owner states it again"
        url = reverse("admin:preferences_preferencesubject_changelist")
        return format_html(
            'Correct or retire it: select it in the <a href="{}?q={}">preference subjects '
            "list</a> and run “Correct selected preferences” (the form starts from this "
            "statement) or “Retire selected preferences”.",
            url,
            obj.key,
        )

    @admin.display(description="operations on this key")
    def history(self, obj):
        operations = selectors.subject_operations(obj)
        if not operations:
            return "—"
        return format_html(
            '<ol class="lx-history">{}</ol>',
            format_html_join(
                "",
                "<li>{} · {} · {} · source {}</li>",
                (
                    (
                        admin_link(op, f"#{op.sequence} {op.kind}"),
                        date_format(op.created_at, "DATETIME_FORMAT"),
                        f"“{op.statement}”" if op.statement else "(no statement)",
                        op.source_ref,
                    )
                    for op in operations
                ),
            ),
        )

    @admin.display(description="stored item")
    def stored_item(self, obj):
        try:
            text = json.dumps(json.loads(obj.item), indent=2, sort_keys=True, ensure_ascii=False)
        except ValueError:
            text = obj.item
        return format_html("<pre>{}</pre>", text)

    @admin.display(description="stored size")
    def stored_size(self, obj):
        return f"{obj.size} bytes"

    def get_queryset(self, request):
        queryset = super().get_queryset(request).select_related("scope__goal")
        return selectors.with_live_marker(queryset, "scope__")

    @admin.display(description="live scope", boolean=True, ordering="is_live")
    def live_scope(self, obj):
        return obj.is_live

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return obj is None and request.user.has_perm("preferences.change_preferencesubject")

    def _operator_action(self, request, queryset, *, action, form_class, title, run):
        """Ask for the operator's source, then write one operation per subject.

        The form carries the revision the operator saw for each subject's scope (hidden
        ``seen_revision_<pk>``); each write expects exactly that revision — or, for the
        next subject of the same scope, the revision the previous write produced — and
        the sequence stops at the first refusal. A host's change that landed between
        form and submit is therefore a ``revision_conflict`` shown as an admin error,
        never silently overwritten (no retry with a newly fetched revision).
        """
        subjects = list(queryset.select_related("scope").order_by("scope_id", "key"))
        # Correcting one preference starts from its current statement (never retyped blind).
        initial = {"statement": subjects[0].statement} if len(subjects) == 1 else {}
        form = form_class(request.POST if "apply" in request.POST else None, initial=initial)
        if "apply" in request.POST and form.is_valid():
            self._apply(request, subjects, form.cleaned_data, action=action, run=run)
            return None
        return TemplateResponse(
            request,
            "admin/preferences/subject_action.html",
            {
                **self.admin_site.each_context(request),
                "title": title,
                "explanation": "Recorded in the journal with this operator source, against "
                "the revision shown for each scope. If a host changed the scope meanwhile, "
                "nothing is written: reload and decide again.",
                "subjects": [(s, _revision_text(s.scope.revision)) for s in subjects],
                "form": form,
                "action": action,
                "submit_label": title,
                "opts": self.model._meta,
            },
        )

    def _apply(self, request, subjects, data, *, action, run) -> None:
        seen = {}
        for subject in subjects:
            value = request.POST.get(f"seen_revision_{subject.pk}")
            if value is None:
                self.message_user(
                    request,
                    "The form did not carry the revision you saw; nothing was written.",
                    messages.ERROR,
                )
                return
            seen[subject.pk] = value
        expected_by_scope: dict[int, str] = {}
        for applied, subject in enumerate(subjects):
            expected = expected_by_scope.get(subject.scope_id, seen[subject.pk])
            operation_id = (
                "admin:"
                + sha256_hex(
                    {
                        "action": action,
                        "scope": subject.scope.scope_key,
                        "key": subject.key,
                        "expected_revision": expected,
                        **data,
                    }
                )[:40]
            )
            try:
                result = run(subject, data, operation_id, expected)
            except DomainError as exc:
                self.message_user(
                    request, f"{subject.key}: {exc.code} ({exc.message})", messages.ERROR
                )
                if applied:
                    self.message_user(
                        request,
                        f"Stopped after {applied} applied operation(s); the rest were not "
                        "attempted.",
                        messages.WARNING,
                    )
                return
            expected_by_scope[subject.scope_id] = result["state"]["revision"]
            log_admin_action(request, subject, f"{result['status']} ({subject.key})")
            self.message_user(
                request,
                f"{subject.key}: {result['status']} at revision {result['state']['revision']}.",
                messages.SUCCESS,
            )

    def _journal_action(self, request, queryset, *, write, action, form_class, title):
        """Run the journal service ``write`` (``services.retire`` / ``remember``) once per
        selected subject, as the signed-in account (the service re-checks it)."""

        def run(subject, data, operation_id, expected):
            return write(
                goal_id=subject.scope.goal_ref,
                agent_id=subject.scope.agent_ref,
                key=subject.key,
                expected_revision=expected,
                operation_id=operation_id,
                execute=True,
                operator=access.signed_in(request),
                **data,
            )

        return self._operator_action(
            request, queryset, action=action, form_class=form_class, title=title, run=run
        )

    @admin.action(description="Retire selected preferences", permissions=["change"])
    def retire_selected(self, request, queryset):
        return self._journal_action(
            request,
            queryset,
            write=services.retire,
            action="retire_selected",
            form_class=OperatorSourceForm,
            title="Retire preferences",
        )

    @admin.action(description="Correct selected preferences", permissions=["change"])
    def correct_selected(self, request, queryset):
        return self._journal_action(
            request,
            queryset,
            write=services.remember,
            action="correct_selected",
            form_class=CorrectionForm,
            title="Correct preferences",
        )


def _revision_text(revision: int | None) -> str:
    return "none" if revision is None else str(revision)


@admin.register(PreferenceOperation)
class PreferenceOperationAdmin(ReadOnlyAdmin):
    list_display = ("sequence", "kind", "key", "operation_id", "scope", "created_at")
    list_filter = ("kind", "scope__goal")
    search_fields = ("key", "operation_id", "scope__goal_ref", "scope__agent_ref")
    # Read-only: the detail page shows every field of the journal entry, in model order.
