"""Admin rough edges of issue 34 on the record list: the typed Reasoning is the stored
retirement reason, a missing checkpoint id says it is required and which checkpoints
would do, confirmations link the record, and every action is in "Recent actions"."""

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model
from django.urls import reverse

from reward_memory import services
from reward_memory.models import MemoryRecord
from tests.reward_memory import factories as f

URL = "/admin/reward_memory/memoryrecord/"


def _grant(checkpoint_id, actor, scopes):
    services.grant_checkpoint(
        checkpoint_id=checkpoint_id,
        project=f.PROJECT,
        actor=actor,
        role="corpus_owner",
        action_scopes=scopes,
        operator=f.op(f.OWNER),
        execute=True,
    )


@pytest.fixture
def record(db, double_corpus, double):
    receipt = f.ingested(event=f.scoped_event(), goal_id="demo", agent_id="author", execute=True)
    return MemoryRecord.objects.get(record_ref=receipt["record_ref"])


def _as(client, name):
    client.force_login(get_user_model().objects.get(username=name))
    return client


def _messages(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def test_retire_stores_the_typed_reasoning_and_logs_the_action(client, record):
    reason = "Replaced by the team's new PR template."
    response = _as(client, "retirer").post(
        URL,
        {"action": "retire", "_selected_action": [record.pk], "reasoning_summary": reason},
        follow=True,
    )
    record.refresh_from_db()
    assert record.lifecycle_state == "retired"
    assert record.retirement["reason_summary"] == reason
    link = reverse("admin:reward_memory_memoryrecord_change", args=[record.pk])
    assert any(
        f'<a href="{link}">{record.record_ref}</a>: retired' in m for m in _messages(response)
    )
    entry = LogEntry.objects.get(object_id=str(record.pk))
    assert entry.change_message == f"Admin action: retire — reason: {reason}"
    recent = client.get("/admin/").content.decode().split('id="recent-actions-module"')[1]
    assert entry.object_repr in recent  # "Recent actions" on the index


def test_a_missing_checkpoint_id_is_required_and_the_usable_ones_are_named(client, record):
    _grant("ckpt-edit", f.OWNER, ["reward_memory.edit.prefs"])
    _grant("ckpt-retire-only", f.OWNER, ["reward_memory.retire.prefs"])
    control = {
        "action": "operator_edit",
        "_selected_action": [record.pk],
        "control_ref": "",
        "reasoning_summary": "Tighter wording.",
        "edited_content_summary": "Lead with the effect.",
    }
    texts = _messages(_as(client, "owner").post(URL, control, follow=True))
    assert any("a Checkpoint id is required for operator control edit" in t for t in texts), texts
    assert any("<code>ckpt-edit</code>" in t for t in texts)
    assert not any("ckpt-retire-only" in t for t in texts)
    assert not any("opaque reference" in t for t in texts)


def test_with_no_usable_checkpoint_the_message_points_to_the_grant_page(client, record):
    control = {"action": "operator_retire", "_selected_action": [record.pk], "control_ref": ""}
    texts = _messages(_as(client, "owner").post(URL, control, follow=True))
    grants = reverse("admin:reward_memory_authoritycheckpoint_changelist")
    assert any("no live checkpoint allows it yet" in t and grants in t for t in texts), texts


def test_record_transitions_read_by_ref_with_their_reference_linked(db, corpus, admin_client):
    old, new = (
        f.ingested(
            event=f.scoped_event(event_id, content_summary=summary),
            goal_id="demo",
            agent_id="author",
            execute=True,
        )
        for event_id, summary in (("ev-1", "Lead with the effect."), ("ev-2", "Effect, then why."))
    )
    services.supersede_record(
        record_ref=old["record_ref"], by_record_ref=new["record_ref"], principal=f.op(f.OWNER)
    )
    record = MemoryRecord.objects.get(record_ref=old["record_ref"])
    successor = MemoryRecord.objects.get(record_ref=new["record_ref"])
    page = admin_client.get(reverse("admin:reward_memory_memoryrecord_change", args=[record.pk]))
    html = page.content.decode()
    assert "#3 active → superseded" in html  # the row names its step, not "<pk>#3"
    assert f"{record.pk}#" not in html
    successor_url = reverse("admin:reward_memory_memoryrecord_change", args=[successor.pk])
    assert f'href="{successor_url}">memory record {new["record_ref"][:16]}…</a>' in html
