import django.utils.timezone
from django.db import migrations

# The daily retention run (docs/operators.md "Retention"), created enabled like 0008's
# schedules: it runs only where `celery beat` runs, and removes nothing while every
# LOOPX_RETAIN_*_DAYS is 0 (the default).
NAME, TASK, MINUTE, HOUR = "loopx: retention", "loopx.core.retention", "41", "3"


def create_schedule(apps, schema_editor):
    crontab, _ = apps.get_model("django_celery_beat", "CrontabSchedule").objects.get_or_create(
        minute=MINUTE, hour=HOUR, day_of_week="*", day_of_month="*", month_of_year="*",
        timezone="UTC",
    )  # fmt: skip
    apps.get_model("django_celery_beat", "PeriodicTask").objects.get_or_create(
        name=NAME, defaults={"task": TASK, "crontab": crontab, "enabled": True}
    )
    apps.get_model("django_celery_beat", "PeriodicTasks").objects.update_or_create(
        ident=1, defaults={"last_update": django.utils.timezone.now()}
    )


def remove_schedule(apps, schema_editor):
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0012_search_namespace_revision"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(create_schedule, remove_schedule)]
