"""Admin building blocks shared by every app.

Journal, receipt and outbox rows are immutable: operators view them, and any operator
operation is an admin action that calls a service.
"""

from django.contrib import admin


class ReadOnlyPermissions:
    """Viewable; never added, changed or deleted through the admin."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class ReadOnlyAdmin(ReadOnlyPermissions, admin.ModelAdmin):
    pass


class ReadOnlyTabularInline(ReadOnlyPermissions, admin.TabularInline):
    extra = 0
    can_delete = False
