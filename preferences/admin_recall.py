"""Admin of the semantic preference recall hook (configs, extensions, provider notes).

Thin: forms check shape, every save, delete and action goes through ``preferences.services``
and a ``DomainError`` becomes an error message.
"""

from django import forms
from django.contrib import admin, messages

from loopx_site.core.errors import DomainError
from preferences import services
from preferences.models import ProviderExtension, ProviderNote, SemanticPreferenceConfig
from preferences.recall.config import validate_config
from preferences.recall.local_provider import validate_note


class SemanticPreferenceConfigForm(forms.ModelForm):
    class Meta:
        model = SemanticPreferenceConfig
        fields = ["name", "project", "description", "config"]

    def clean_config(self):
        value = self.cleaned_data["config"]
        try:
            validate_config(value, origin="registered")
        except DomainError as exc:
            field = f" ({exc.field})" if exc.field else ""
            raise forms.ValidationError(f"{exc.code}{field}: {exc.message}") from None
        return value


@admin.register(SemanticPreferenceConfig)
class SemanticPreferenceConfigAdmin(admin.ModelAdmin):
    form = SemanticPreferenceConfigForm
    list_display = ["name", "project", "enabled", "surface_ids", "updated_at"]
    search_fields = ["name", "project", "description"]
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
        try:
            services.register_config(
                name=obj.name,
                project=obj.project,
                config=obj.config,
                description=obj.description,
                execute=True,
            )
        except DomainError as exc:
            self.message_user(request, f"{exc.code}: {exc.message}", messages.ERROR)
            return
        saved = SemanticPreferenceConfig.objects.get(name=obj.name)
        obj.pk = saved.pk

    def delete_model(self, request, obj):
        services.unregister_config(name=obj.name)

    def delete_queryset(self, request, queryset):
        for row in queryset:
            services.unregister_config(name=row.name)


@admin.register(ProviderExtension)
class ProviderExtensionAdmin(admin.ModelAdmin):
    """Installed from a manifest (`semantic_preference extension install`); read-only here
    except activation, which goes through the service."""

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
    actions = ["activate", "deactivate"]

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in self.model._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def _toggle(self, request, queryset, *, active: bool):
        run = services.activate_extension if active else services.deactivate_extension
        for row in queryset:
            try:
                result = run(extension_id=row.extension_id)
            except DomainError as exc:
                self.message_user(request, f"{exc.code}: {exc.message}", messages.ERROR)
                continue
            self.message_user(request, f"{row.extension_id}: {result['status']}")

    @admin.action(description="Activate selected extensions", permissions=["change"])
    def activate(self, request, queryset):
        self._toggle(request, queryset, active=True)

    @admin.action(description="Deactivate selected extensions", permissions=["change"])
    def deactivate(self, request, queryset):
        self._toggle(request, queryset, active=False)


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
class ProviderNoteAdmin(admin.ModelAdmin):
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
        try:
            services.save_provider_note(
                project=obj.project,
                note_id=obj.note_id,
                summary=obj.summary,
                body=obj.body,
                surfaces=obj.surfaces or [],
                context=obj.context or {},
                active=obj.active,
            )
        except DomainError as exc:
            self.message_user(request, f"{exc.code}: {exc.message}", messages.ERROR)
            return
        obj.pk = ProviderNote.objects.get(project=obj.project, note_id=obj.note_id).pk

    def delete_model(self, request, obj):
        services.delete_provider_note(project=obj.project, note_id=obj.note_id)

    def delete_queryset(self, request, queryset):
        for row in queryset:
            services.delete_provider_note(project=row.project, note_id=row.note_id)

    @admin.action(
        description="Retire selected notes (keep, stop recalling)", permissions=["change"]
    )
    def retire(self, request, queryset):
        for row in queryset:
            result = services.retire_provider_note(project=row.project, note_id=row.note_id)
            self.message_user(request, f"{row.note_id}: {result['status']}")
