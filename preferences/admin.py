"""Operators see scopes, current subjects and the journal (read-only). "Retire" and
"correct" go through the same services as the CLI and API, with an operator source and
the scope's current revision — the admin never edits journal rows in place."""

from django import forms
from django.contrib import admin, messages
from django.template.response import TemplateResponse

from loopx_site.core.admin_base import ReadOnlyAdmin, ReadOnlyTabularInline
from loopx_site.core.canonical import sha256_hex
from loopx_site.core.errors import DomainError
from preferences import (
    admin_recall,  # noqa: F401 - registers the recall hook's admin
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


@admin.register(PreferenceScope)
class PreferenceScopeAdmin(ReadOnlyAdmin):
    list_display = (
        "goal_ref",
        "agent_ref",
        "revision",
        "subject_count",
        "runtime_id",
        "journal_started_at",
    )
    list_filter = ("goal", "runtime_id", ("revision", admin.EmptyFieldListFilter))
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

    @admin.display(description="subjects")
    def subject_count(self, obj):
        return obj.subjects.count()

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
    list_display = ("key", "state", "revision", "scope", "expires_at", "updated_at")
    list_filter = ("state", "scope__goal", ("expires_at", admin.EmptyFieldListFilter))
    search_fields = ("key", "scope__goal_ref", "scope__agent_ref")
    readonly_fields = (
        "scope",
        "key",
        "state",
        "statement",
        "source_ref",
        "expires_at",
        "revision",
        "operation",
        "updated_at",
    )
    actions = ["retire_selected", "correct_selected"]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return obj is None and request.user.has_perm("preferences.change_preferencesubject")

    def _operator_action(self, request, queryset, *, action, form_class, title, run):
        queryset = queryset.select_related("scope", "operation")
        form = form_class(request.POST if "apply" in request.POST else None)
        if "apply" in request.POST and form.is_valid():
            for subject in queryset:
                operation_id = (
                    "admin:"
                    + sha256_hex(
                        {
                            "action": action,
                            "after": subject.operation.operation_id,
                            **form.cleaned_data,
                        }
                    )[:40]
                )
                try:
                    receipt = run(subject, form.cleaned_data, operation_id)
                except DomainError as exc:
                    self.message_user(
                        request, f"{subject.key}: {exc.code}: {exc.message}", messages.ERROR
                    )
                else:
                    self.message_user(
                        request,
                        f"{subject.key}: {receipt['status']} at revision "
                        f"{receipt['state']['revision']}.",
                        messages.SUCCESS,
                    )
            return None
        return TemplateResponse(
            request,
            "admin/preferences/subject_action.html",
            {
                **self.admin_site.each_context(request),
                "title": title,
                "explanation": "Recorded in the journal with this operator source, against each "
                "scope's current revision.",
                "subjects": queryset,
                "form": form,
                "action": action,
                "submit_label": title,
                "opts": self.model._meta,
            },
        )

    @admin.action(description="Retire selected preferences", permissions=["change"])
    def retire_selected(self, request, queryset):
        def run(subject, data, operation_id):
            return services.retire(
                goal_id=subject.scope.goal_ref,
                agent_id=subject.scope.agent_ref,
                key=subject.key,
                expected_revision=str(subject.scope.revision),
                operation_id=operation_id,
                execute=True,
                **data,
            )

        return self._operator_action(
            request,
            queryset,
            action="retire_selected",
            form_class=OperatorSourceForm,
            title="Retire preferences",
            run=run,
        )

    @admin.action(description="Correct selected preferences", permissions=["change"])
    def correct_selected(self, request, queryset):
        def run(subject, data, operation_id):
            return services.remember(
                goal_id=subject.scope.goal_ref,
                agent_id=subject.scope.agent_ref,
                key=subject.key,
                expected_revision=str(subject.scope.revision),
                operation_id=operation_id,
                execute=True,
                **data,
            )

        return self._operator_action(
            request,
            queryset,
            action="correct_selected",
            form_class=CorrectionForm,
            title="Correct preferences",
            run=run,
        )


@admin.register(PreferenceOperation)
class PreferenceOperationAdmin(ReadOnlyAdmin):
    list_display = ("sequence", "kind", "key", "operation_id", "scope", "created_at")
    list_filter = ("kind", "scope__goal")
    search_fields = ("key", "operation_id", "scope__goal_ref", "scope__agent_ref")
    readonly_fields = (
        "scope",
        "sequence",
        "operation_id",
        "kind",
        "key",
        "statement",
        "source_ref",
        "source_quote",
        "expected_revision",
        "resulting_revision",
        "predecessor_operation_id",
        "expires_at",
        "intent_hash",
        "receipt",
        "created_at",
    )
