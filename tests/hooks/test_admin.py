import pytest
from django.urls import reverse

from hooks import services
from hooks.models import HookDispatch, HookIntent, IntentExecution
from tests.hooks.factories import TodoFactory, settle


@pytest.fixture
def journal(agent, install):
    install("Proposer", "Raiser", "hooks.capabilities.periodic_report.PeriodicReportRuntimeTrigger")
    TodoFactory(goal=agent.goal, todo_id="t1", segment_ref="seg-1")
    TodoFactory(goal=agent.goal, todo_id="t2", segment_ref="seg-2")
    settle(todo_id="t1", turn="turn-1")
    settle(todo_id="t2", turn="turn-2", event_kind="replan_recorded")
    replan_note = HookIntent.objects.get(
        hook_id="beta.proposer", dispatch__event_kind="replan_recorded"
    )
    services.execute_intents(
        executor="fake-scheduler", execute=True, intent_ids=[replan_note.intent_id]
    )


@pytest.mark.parametrize(
    "model",
    [
        "todo",
        "turnsettlement",
        "durablewritebackreceipt",
        "quotaspend",
        "hookdispatch",
        "hookintent",
        "hookphasecheckpoint",
        "intentexecution",
    ],
)
def test_changelists_and_change_views_render(admin_client, journal, model):
    response = admin_client.get(reverse(f"admin:hooks_{model}_changelist"))
    assert response.status_code == 200
    from django.apps import apps

    obj = apps.get_model("hooks", model).objects.first()
    detail = admin_client.get(reverse(f"admin:hooks_{model}_change", args=[obj.pk]))
    assert detail.status_code == 200


def test_dispatch_changelist_filters_by_status_and_failure_code(admin_client, journal):
    url = reverse("admin:hooks_hookdispatch_changelist")
    failed = admin_client.get(url, {"failure_code": "producer_failed"})
    assert failed.status_code == 200
    assert list(failed.context["cl"].queryset.values_list("hook_id", flat=True)) == [
        "delta.raiser",
        "delta.raiser",
    ]
    accepted = admin_client.get(url, {"status__exact": "accepted"})
    assert set(accepted.context["cl"].queryset.values_list("status", flat=True)) == {"accepted"}
    assert "failure code" in failed.content.decode()


def test_journal_rows_are_read_only(admin_client, journal):
    dispatch = HookDispatch.objects.first()
    url = reverse("admin:hooks_hookdispatch_change", args=[dispatch.pk])
    page = admin_client.get(url).content.decode()
    assert 'name="_save"' not in page
    assert admin_client.post(url, {"status": "accepted"}).status_code == 403
    delete = reverse("admin:hooks_hookdispatch_delete", args=[dispatch.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    assert HookDispatch.objects.filter(pk=dispatch.pk).exists()
    assert admin_client.get(reverse("admin:hooks_hookdispatch_add")).status_code == 403


def test_intent_admin_admit_and_reject_actions_go_through_the_executor(admin_client, journal):
    url = reverse("admin:hooks_hookintent_changelist")
    periodic = list(HookIntent.objects.filter(intent_kind="periodic_report.trigger_evaluation"))
    other = HookIntent.objects.get(hook_id="beta.proposer", dispatch__event_kind="todo_completed")
    response = admin_client.post(
        url,
        {"action": "admit_selected", "_selected_action": [periodic[0].pk, other.pk]},
        follow=True,
    )
    assert response.status_code == 200
    text = response.content.decode()
    assert "1 admitted" in text
    assert "1 rejected (intent_kind_not_allowlisted)" in text
    periodic[0].refresh_from_db()
    other.refresh_from_db()
    assert (periodic[0].status, other.status) == ("admitted", "rejected")
    admin_client.post(url, {"action": "reject_selected", "_selected_action": [periodic[1].pk]})
    periodic[1].refresh_from_db()
    assert (periodic[1].status, periodic[1].status_reason) == ("rejected", "operator_rejected")
    assert IntentExecution.objects.count() == 4
    status_filter = admin_client.get(url, {"status__exact": "pending"})
    assert all(i.status == "pending" for i in status_filter.context["cl"].queryset)


def test_registrations_page_lists_installed_hooks_read_only(admin_client, journal):
    url = reverse("admin:hooks_hookregistration_changelist")
    response = admin_client.get(url)
    assert response.status_code == 200
    page = response.content.decode()
    for hook_id in ("beta.proposer", "delta.raiser", "periodic_report.runtime_trigger"):
        assert hook_id in page
    assert "installed" in page
    index = admin_client.get(reverse("admin:index")).content.decode()
    assert "Installed hook registrations" in index
    assert admin_client.get(reverse("admin:hooks_hookregistration_add")).status_code == 403


def test_registrations_page_requires_staff(client, db):
    url = reverse("admin:hooks_hookregistration_changelist")
    assert client.get(url).status_code == 302
