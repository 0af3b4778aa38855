"""Background work in the admin: the read-only ``BackgroundRun`` journal, and
django-celery-beat's periodic schedules under the admin's normal model permissions
(``django_celery_beat.*_periodictask`` …; a view-only account sees them, changes nothing).

Beat's own admin is replaced: its actions declare the permission they need, enabling or
disabling goes through ``loopx_site.core.background.set_schedules_enabled`` (which
re-checks the signed-in account), and "run now" is not offered (a task runs on a worker:
``celery call`` or the matching management command). Interval and crontab schedules are
editable; solar and clocked schedules are not used by LoopX and are not shown.
"""

import django_celery_beat.admin as beat_admin
from django.contrib import admin, messages
from django_celery_beat.models import (
    ClockedSchedule,
    CrontabSchedule,
    IntervalSchedule,
    PeriodicTask,
    SolarSchedule,
)

from loopx_site.core import access, background
from loopx_site.core.admin_base import ReadOnlyAdmin
from loopx_site.core.errors import DomainError
from loopx_site.core.models import BackgroundRun


@admin.register(BackgroundRun)
class BackgroundRunAdmin(ReadOnlyAdmin):
    list_display = ("task", "outcome", "error_code", "started_at", "finished_at", "worker")
    list_filter = ("task", "outcome")
    readonly_fields = (
        "task",
        "task_id",
        "worker",
        "started_at",
        "finished_at",
        "outcome",
        "error_code",
        "counts",
    )
    date_hierarchy = "started_at"

    def changelist_view(self, request, extra_context=None):
        """The deployment's retention policies above the list (they prune these rows)."""
        from loopx_site.core import retention

        extra = {"subtitle": retention.describe(), **(extra_context or {})}
        return super().changelist_view(request, extra_context=extra)


for _model in (PeriodicTask, IntervalSchedule, CrontabSchedule, SolarSchedule, ClockedSchedule):
    if admin.site.is_registered(_model):
        admin.site.unregister(_model)


@admin.register(PeriodicTask)
class PeriodicTaskAdmin(beat_admin.PeriodicTaskAdmin):
    actions = ("enable_tasks", "disable_tasks")

    def _switch(self, request, queryset, *, enabled: bool) -> None:
        try:
            changed = background.set_schedules_enabled(
                queryset, enabled=enabled, operator=access.signed_in(request)
            )
        except DomainError as exc:
            self.message_user(request, f"{exc.code}: {exc.message}", messages.ERROR)
            return
        state = "enabled" if enabled else "disabled"
        self.message_user(request, f"{changed} schedule(s) {state}.", messages.SUCCESS)

    @admin.action(description="Enable selected schedules", permissions=["change"])
    def enable_tasks(self, request, queryset):
        self._switch(request, queryset, enabled=True)

    @admin.action(description="Disable selected schedules", permissions=["change"])
    def disable_tasks(self, request, queryset):
        self._switch(request, queryset, enabled=False)


admin.site.register(IntervalSchedule, beat_admin.IntervalScheduleAdmin)
admin.site.register(CrontabSchedule, beat_admin.CrontabScheduleAdmin)
