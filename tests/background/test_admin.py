"""The schedules are rows operators see and edit in the admin (django-celery-beat's
DatabaseScheduler reads them); switching one needs the beat model's change permission;
the BackgroundRun journal is read-only."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.urls import reverse
from django_celery_beat.models import PeriodicTask, PeriodicTasks

from loopx_site.core import background
from loopx_site.core.models import BackgroundRun

pytestmark = pytest.mark.django_db

DEFAULT_TASKS = {
    "loopx.hooks.recover_dispatches",
    "loopx.hooks.execute_admitted_intents",
    "loopx.reward_memory.reconcile_ingests",
    "loopx.reward_memory.expire_records",
    "loopx.reward_memory.provider_deletions",
    "loopx.core.retention",
}


def _staff(client, *codenames):
    user = get_user_model().objects.create_user("ops", password="pw-for-tests-only")
    user.is_staff = True
    user.save()
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    client.force_login(user)
    return user


def test_the_default_schedules_exist_enabled_and_are_listed(client):
    assert set(PeriodicTask.objects.values_list("task", flat=True)) == DEFAULT_TASKS
    assert all(PeriodicTask.objects.values_list("enabled", flat=True))
    expiry = PeriodicTask.objects.get(task="loopx.reward_memory.expire_records")
    assert (expiry.crontab.minute, expiry.crontab.hour) == ("17", "*")
    _staff(client, "view_periodictask")
    page = client.get(reverse("admin:django_celery_beat_periodictask_changelist"))
    assert page.status_code == 200
    assert b"loopx: recover hook dispatches" in page.content
    assert b"run_tasks" not in page.content  # no "run now" from the web process


def test_the_schedule_form_offers_the_registered_task_names(client):
    _staff(client, "view_periodictask", "change_periodictask")
    task = PeriodicTask.objects.get(task="loopx.hooks.recover_dispatches")
    page = client.get(reverse("admin:django_celery_beat_periodictask_change", args=[task.pk]))
    assert page.status_code == 200
    for name in DEFAULT_TASKS:
        assert name.encode() in page.content


def test_disabling_a_schedule_needs_the_change_permission(client):
    task = PeriodicTask.objects.get(task="loopx.hooks.execute_admitted_intents")
    url = reverse("admin:django_celery_beat_periodictask_changelist")
    form = {"action": "disable_tasks", "_selected_action": [task.pk]}
    _staff(client, "view_periodictask")
    client.post(url, form)
    assert PeriodicTask.objects.get(pk=task.pk).enabled is True
    changed_before = PeriodicTasks.last_change()

    get_user_model().objects.get(username="ops").user_permissions.add(
        Permission.objects.get(codename="change_periodictask")
    )
    response = client.post(url, form, follow=True)
    assert b"1 schedule(s) disabled." in response.content
    assert PeriodicTask.objects.get(pk=task.pk).enabled is False
    assert PeriodicTasks.last_change() > changed_before  # beat re-reads its schedule


def test_the_run_journal_is_read_only_in_the_admin(client):
    background.record_run("loopx.hooks.recover_dispatches", lambda: {"claimed": 0})
    run = BackgroundRun.objects.get()
    _staff(client, "view_backgroundrun", "change_backgroundrun", "add_backgroundrun")
    listing = client.get(reverse("admin:core_backgroundrun_changelist"))
    assert listing.status_code == 200
    assert b"loopx.hooks.recover_dispatches" in listing.content
    assert client.post(reverse("admin:core_backgroundrun_add"), {}).status_code == 403
    change = reverse("admin:core_backgroundrun_change", args=[run.pk])
    assert client.post(change, {"outcome": "failed"}).status_code == 403
    assert BackgroundRun.objects.get().outcome == "ok"


def test_the_schedule_pages_render_for_an_operator(admin_client):
    for model in ("periodictask", "intervalschedule", "crontabschedule"):
        for view in ("changelist", "add"):
            url = reverse(f"admin:django_celery_beat_{model}_{view}")
            assert admin_client.get(url).status_code == 200, url
    index = admin_client.get(reverse("admin:index")).content.decode()
    assert "Background runs" in index
    assert "Periodic tasks" in index
    assert "Solar" not in index  # not used by LoopX
