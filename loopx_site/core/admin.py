from django.contrib import admin, messages

from loopx_site.core import services
from loopx_site.core.models import Agent, Goal, HostToken


class AgentInline(admin.TabularInline):
    model = Agent
    extra = 0
    fields = ("agent_id", "created_at")
    readonly_fields = ("agent_id", "created_at")
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Goal)
class GoalAdmin(admin.ModelAdmin):
    list_display = ("goal_id", "agent_count", "instance_id", "created_at", "updated_at")
    search_fields = ("goal_id", "agents__agent_id", "instance_id")
    list_filter = ("created_at",)
    readonly_fields = ("goal_id", "state_ref", "instance_id", "created_at", "updated_at")
    inlines = [AgentInline]

    @admin.display(description="agents")
    def agent_count(self, obj):
        return obj.agents.count()

    def has_add_permission(self, request):
        return False  # registration goes through `manage.py goal register` / the API


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = ("agent_id", "goal", "created_at")
    list_filter = ("goal",)
    search_fields = ("agent_id", "goal__goal_id")
    readonly_fields = ("goal", "agent_id", "created_at")

    def has_add_permission(self, request):
        return False


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
        for token in queryset:
            services.revoke_token(token=token)
        self.message_user(request, f"Revoked {queryset.count()} token(s).", messages.SUCCESS)
