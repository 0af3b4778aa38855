import re

from django import forms
from django.contrib import admin, messages

from loopx_site.core import (
    access,
    admin_background,  # noqa: F401  (background runs, schedules)
    services,
)
from loopx_site.core.errors import DomainError
from loopx_site.core.models import Agent, Goal, HostToken
from loopx_site.core.validation import require_identifier


class AgentInline(admin.TabularInline):
    model = Agent
    extra = 0
    fields = ("agent_id", "created_at")
    readonly_fields = ("agent_id", "created_at")
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


class GoalRegistrationForm(forms.ModelForm):
    """Registry writes from the admin: the same service as `goal register --execute`."""

    add_agents = forms.CharField(
        required=False,
        help_text="Agent ids to register in this Goal, separated by commas or spaces. "
        "Agents are never removed.",
    )

    class Meta:
        model = Goal
        fields = ("goal_id", "state_ref", "instance_id")
        help_texts = {
            "state_ref": "Changing it moves every Agent of this Goal to a new, empty "
            "preference scope until `semantic_preference agent migrate-scope --execute`.",
        }

    def clean(self):
        cleaned = super().clean()
        raw = cleaned.get("add_agents") or ""
        cleaned["agent_ids"] = sorted(set(re.split(r"[\s,]+", raw)) - {""})
        if self.instance.pk is None and not cleaned["agent_ids"]:
            self.add_error("add_agents", "Register at least one Agent with a new Goal.")
        checks = [("goal_id", cleaned.get("goal_id") or self.instance.goal_id)]
        checks += [("add_agents", agent_id) for agent_id in cleaned["agent_ids"]]
        if cleaned.get("instance_id"):
            checks.append(("instance_id", cleaned["instance_id"]))
        for name, value in checks:
            try:
                require_identifier(value, name)
            except DomainError as exc:
                self.add_error(name, exc.message)
        return cleaned


@admin.register(Goal)
class GoalAdmin(admin.ModelAdmin):
    list_display = ("goal_id", "agent_count", "instance_id", "created_at", "updated_at")
    search_fields = ("goal_id", "agents__agent_id", "instance_id")
    list_filter = ("created_at",)
    form = GoalRegistrationForm
    inlines = [AgentInline]
    actions = ["erase_memory"]

    def has_erase_permission(self, request):
        return request.user.has_perm("core.erase_goal")

    @admin.action(description="Erase this Goal's memory", permissions=["erase"])
    def erase_memory(self, request, queryset):
        from loopx_site.core import admin_erasure

        return admin_erasure.erase_action(self, request, queryset)

    @admin.display(description="agents")
    def agent_count(self, obj):
        return obj.agents.count()

    def get_readonly_fields(self, request, obj=None):
        return ("goal_id", "created_at", "updated_at") if obj else ()

    def has_delete_permission(self, request, obj=None):
        # A Goal is a durable runtime identity its journals and receipts point at: the
        # admin offers no Delete that could only end in "Cannot delete goal".
        return False

    def get_fields(self, request, obj=None):
        fields = ["goal_id", "state_ref", "instance_id", "add_agents"]
        return [*fields, "created_at", "updated_at"] if obj else fields

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        existing = list(obj.agents.values_list("agent_id", flat=True)) if change else []
        result = services.register_goal(
            goal_id=obj.goal_id,
            agent_ids=sorted(set(existing) | set(data["agent_ids"])),
            state_ref=data.get("state_ref") or None,
            instance_id=data.get("instance_id") or None,
            execute=True,
        )
        obj.pk = result.goal.pk
        obj.refresh_from_db()
        for warning in result.warnings:
            self.message_user(request, warning, messages.WARNING)


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = ("agent_id", "goal", "created_at")
    list_filter = ("goal",)
    search_fields = ("agent_id", "goal__goal_id")
    readonly_fields = ("goal", "agent_id", "created_at")

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # durable identity, as for Goals


@admin.register(HostToken)
class HostTokenAdmin(admin.ModelAdmin):
    list_display = ("prefix", "goal", "agent", "label", "created_at", "revoked_at")
    list_filter = ("goal", ("revoked_at", admin.EmptyFieldListFilter))
    search_fields = ("prefix", "label", "goal__goal_id", "agent__agent_id")
    readonly_fields = ("prefix", "goal", "agent", "label", "created_at", "revoked_at")
    exclude = ("key_digest",)
    actions = ["revoke"]

    def has_add_permission(self, request):
        return False  # secrets are shown once by `manage.py token create`

    @admin.action(description="Revoke selected tokens", permissions=["change"])
    def revoke(self, request, queryset):
        operator = access.signed_in(request)
        try:
            for token in queryset:
                services.revoke_token(token=token, operator=operator)
        except DomainError as exc:
            self.message_user(request, f"{exc.code}: {exc.message}", messages.ERROR)
            return
        self.message_user(request, f"Revoked {queryset.count()} token(s).", messages.SUCCESS)
