"""A failed hook dispatch has a next step in the admin: its detail page says how to
replay it, and the changelist action replays it through ``services.replay`` (logged in
"Recent actions"). Intent actions never show the executor's internal id."""

import pytest
from django.contrib.admin.models import LogEntry
from django.urls import reverse

from hooks.models import HookDispatch, HookIntent
from tests.hooks.factories import TodoFactory, settle


@pytest.fixture
def failed(agent, install):
    install("Proposer", "Raiser")
    TodoFactory(goal=agent.goal, todo_id="t1", segment_ref="seg-1")
    settle(todo_id="t1", turn="turn-1")
    return HookDispatch.objects.get(hook_id="delta.raiser")


def test_a_failed_dispatch_page_names_the_replay(admin_client, failed):
    assert failed.status == "failed"
    page = admin_client.get(reverse("admin:hooks_hookdispatch_change", args=[failed.pk]))
    text = page.content.decode()
    assert "Replay the hook phase of the selected failed dispatches" in text
    assert f"hooks replay --receipt-id {failed.receipt.receipt_id} --execute" in text


def test_the_replay_action_replays_and_is_logged(admin_client, failed):
    url = reverse("admin:hooks_hookdispatch_changelist")
    response = admin_client.post(
        url, {"action": "replay_selected", "_selected_action": [failed.pk]}, follow=True
    )
    messages = [str(m) for m in response.context["messages"]]
    assert any(f"{failed.dispatch_id}</a>: replayed; the dispatch is now" in m for m in messages)
    entry = LogEntry.objects.get(object_id=str(failed.pk))
    assert "Admin action: replay_selected" in entry.change_message
    ok = HookDispatch.objects.exclude(status="failed").first()
    response = admin_client.post(
        url, {"action": "replay_selected", "_selected_action": [ok.pk]}, follow=True
    )
    assert any("not failed" in str(m) for m in response.context["messages"])


def test_intent_actions_never_name_the_internal_executor(admin_client, failed):
    page = admin_client.get(reverse("admin:hooks_hookintent_changelist")).content.decode()
    assert "fake-scheduler" not in page
    intent = HookIntent.objects.first()
    response = admin_client.post(
        reverse("admin:hooks_hookintent_changelist"),
        {"action": "admit_selected", "_selected_action": [intent.pk]},
        follow=True,
    )
    messages = [str(m) for m in response.context["messages"]]
    assert messages
    assert all("fake-scheduler" not in m for m in messages)
    assert LogEntry.objects.filter(object_id=str(intent.pk)).exists()
