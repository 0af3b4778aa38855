"""Admin of the semantic preference recall hook (configs, extensions, provider notes).

Thin: forms check shape, every save, delete and action goes through ``preferences.services``
and a ``DomainError`` becomes an error message.

The admin never creates a provider command: a config form may only bind an installed
extension by ``provider.extension_id`` and set non-executable fields (the registered-origin
rule of ``validate_config``), and installed extensions are read-only here except
disabling. Installing, upgrading and enabling happen in the operator's shell
(``manage.py semantic_preference extension … --execute``).
"""

from typing import Any

from django import forms
from django.contrib import admin, messages

from loopx_site.core.access import signed_in
from loopx_site.core.errors import DomainError
from preferences import services
from preferences.documents import extensions as extension_documents
from preferences.models import ProviderExtension, ProviderNote, SemanticPreferenceConfig
from preferences.recall.local_provider import validate_note
from preferences.recall.registry import validate_registered


class ServiceAdmin(admin.ModelAdmin):
    """Every save, delete and action calls a ``preferences.services`` function; its coded
    error becomes an error message."""

    def call_service(self, request, service, /, **arguments) -> tuple[bool, Any]:
        """``(True, result)``, or ``(False, None)`` once the coded error was shown."""
        try:
            return True, service(**arguments)
        except DomainError as exc:
            self.message_user(request, f"{exc.code}: {exc.message}", messages.ERROR)
            return False, None

    def delete_queryset(self, request, queryset):
        for row in queryset:
            self.delete_model(request, row)

    def act_on_rows(self, request, queryset, service, label: str, arguments) -> None:
        """Call ``service`` with ``arguments(row)`` for each selected row and report each
        row (named by its ``label`` field) with the status the service returned."""
        for row in queryset:
            done, result = self.call_service(request, service, **arguments(row))
            if done:
                self.message_user(request, f"{getattr(row, label)}: {result['status']}")


class SemanticPreferenceConfigForm(forms.ModelForm):
    class Meta:
        model = SemanticPreferenceConfig
        fields = ["name", "goal", "shared_with", "project", "description", "config"]

    def clean_config(self):
        value = self.cleaned_data["config"]
        try:
            validate_registered(value)
        except DomainError as exc:
            field = f" ({exc.field})" if exc.field else ""
            raise forms.ValidationError(f"{exc.code}{field}: {exc.message}") from None
        return value


@admin.register(SemanticPreferenceConfig)
class SemanticPreferenceConfigAdmin(ServiceAdmin):
    form = SemanticPreferenceConfigForm
    list_display = ["name", "goal", "project", "enabled", "surface_ids", "updated_at"]
    list_filter = ["goal"]
    search_fields = ["name", "project", "description"]
    filter_horizontal = ["shared_with"]
    readonly_fields = ["config_digest", "created_at", "updated_at"]

    @admin.display(boolean=True)
    def enabled(self, obj):
        return bool(isinstance(obj.config, dict) and obj.config.get("enabled"))

    @admin.display(description="surfaces")
    def surface_ids(self, obj):
        surfaces = obj.config.get("surfaces", {}) if isinstance(obj.config, dict) else {}
        return ", ".join(sorted(surfaces)) if isinstance(surfaces, dict) else ""

    def get_readonly_fields(self, request, obj=None):
        return [*self.readonly_fields, "name"] if obj else self.readonly_fields

    def save_model(self, request, obj, form, change):
        registered, _ = self.call_service(
            request,
            services.register_config,
            name=obj.name,
            project=obj.project,
            config=obj.config,
            goal_id=obj.goal.goal_id if obj.goal_id else None,
            description=obj.description,
            execute=True,
        )
        if not registered:
            return
        saved = SemanticPreferenceConfig.objects.get(name=obj.name)
        obj.pk = saved.pk
        self._shared = [g.goal_id for g in form.cleaned_data.get("shared_with") or []]

    def save_related(self, request, form, formsets, change):
        """Sharing goes through the service (the form's own m2m save is not used)."""
        if not SemanticPreferenceConfig.objects.filter(name=form.instance.name).exists():
            return
        self.call_service(
            request,
            services.share_config,
            name=form.instance.name,
            goal_ids=getattr(self, "_shared", []),
            execute=True,
        )

    def delete_model(self, request, obj):
        services.unregister_config(name=obj.name)


@admin.register(ProviderExtension)
class ProviderExtensionAdmin(ServiceAdmin):
    """Installed from a manifest (`semantic_preference extension install --execute`);
    read-only here except disabling (enabling runs only in the operator's shell)."""

    list_display = [
        "extension_id",
        "version",
        "active",
        "permission",
        "timeout_seconds",
        "updated_at",
    ]
    list_filter = ["active", "permission", "capability"]
    search_fields = ["extension_id", "description"]
    actions = ["deactivate"]

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in self.model._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.action(description="Disable selected extensions", permissions=["change"])
    def deactivate(self, request, queryset):
        operator = signed_in(request)
        self.act_on_rows(
            request,
            queryset,
            lambda **call: extension_documents.operation(services.deactivate_extension(**call)),
            "extension_id",
            lambda row: {"extension_id": row.extension_id, "operator": operator, "execute": True},
        )


class ProviderNoteForm(forms.ModelForm):
    class Meta:
        model = ProviderNote
        fields = ["project", "note_id", "summary", "body", "surfaces", "context", "active"]

    def clean(self):
        data = super().clean()
        project = data.get("project") or getattr(self.instance, "project", None)
        note_id = data.get("note_id") or getattr(self.instance, "note_id", None)
        try:
            validate_note(
                project,
                note_id,
                data.get("summary"),
                data.get("body") or "",
                data.get("surfaces") or [],
                data.get("context") or {},
            )
        except DomainError as exc:
            raise forms.ValidationError(
                {exc.field: exc.message} if exc.field in self.fields else exc.message
            ) from None
        return data


@admin.register(ProviderNote)
class ProviderNoteAdmin(ServiceAdmin):
    form = ProviderNoteForm
    list_display = ["note_id", "project", "active", "note_surfaces", "updated_at"]
    list_filter = ["active", "project"]
    search_fields = ["note_id", "project", "summary", "body"]
    readonly_fields = ["created_at", "updated_at"]
    actions = ["retire"]

    @admin.display(description="surfaces")
    def note_surfaces(self, obj):
        return ", ".join(obj.surfaces or []) or "(every surface)"

    def get_readonly_fields(self, request, obj=None):
        return [*self.readonly_fields, "project", "note_id"] if obj else self.readonly_fields

    def save_model(self, request, obj, form, change):
        saved, _ = self.call_service(
            request,
            services.save_provider_note,
            project=obj.project,
            note_id=obj.note_id,
            summary=obj.summary,
            body=obj.body,
            surfaces=obj.surfaces or [],
            context=obj.context or {},
            active=obj.active,
        )
        if not saved:
            return
        obj.pk = ProviderNote.objects.get(project=obj.project, note_id=obj.note_id).pk

    def delete_model(self, request, obj):
        services.delete_provider_note(project=obj.project, note_id=obj.note_id)

    @admin.action(
        description="Retire selected notes (keep, stop recalling)", permissions=["change"]
    )
    def retire(self, request, queryset):
        operator = signed_in(request)
        self.act_on_rows(
            request,
            queryset,
            services.retire_provider_note,
            "note_id",
            lambda row: {"project": row.project, "note_id": row.note_id, "operator": operator},
        )
