"""``make run``'s operator holds the authority the demo needs: signed in as that account,
the admin's retire / operator control / checkpoint revoke actions work on the demo."""

import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from reward_memory.models import AuthorityCheckpoint, Corpus, MemoryRecord, OperatorControl


@pytest.fixture
def signed_in(db, client):
    call_command("loopx_demo", "--operator", "operator", stdout=io.StringIO())
    client.force_login(get_user_model().objects.get(username="operator"))
    return client


def _messages(response) -> list[str]:
    """The messages (a confirmation links the record it names: that link read as its text)."""
    record_link = r'<a href="/admin/reward_memory/memoryrecord/\d+/change/">([^<]*)</a>'
    return [re.sub(record_link, r"\1", str(m)) for m in response.context["messages"]]


def test_the_demo_corpora_are_owned_by_the_make_run_operator(signed_in):
    for corpus in Corpus.objects.all():
        assert (corpus.owner, corpus.retirement_authority) == ("user:operator", "user:operator")
    control = AuthorityCheckpoint.objects.get(checkpoint_id="demo-operator-control")
    assert control.actor == "user:operator"
    assert "reward_memory.retire.loopx-demo-turn-admission" in control.action_scopes


def test_operator_retire_in_the_admin_performs_the_retirement_with_readback(signed_in):
    url = reverse("admin:reward_memory_memoryrecord_changelist")
    record = MemoryRecord.objects.filter(
        corpus__corpus_id="loopx-demo-turn-admission", lifecycle_state="active"
    ).first()
    form = {
        "_selected_action": [record.pk],
        "control_ref": "demo-operator-control",
        "reasoning_summary": "No longer how we work.",
    }
    retire = signed_in.post(url, {**form, "action": "operator_retire"}, follow=True)
    assert any(
        f"{record.record_ref}: retired under control rmoc_" in t
        and "read back: retired, no longer recallable" in t
        for t in _messages(retire)
    ), _messages(retire)
    assert OperatorControl.objects.filter(action="retire").count() == 1
    record.refresh_from_db()
    assert record.lifecycle_state == "retired"


def test_plain_retire_in_the_admin_shows_the_readback(signed_in):
    record = MemoryRecord.objects.filter(
        corpus__corpus_id="loopx-demo-pr-description", lifecycle_state="active"
    ).first()
    done = signed_in.post(
        reverse("admin:reward_memory_memoryrecord_changelist"),
        {"action": "retire", "_selected_action": [record.pk]},
        follow=True,
    )
    assert f"{record.record_ref}: retired; read back: retired, no longer recallable." in (
        _messages(done)
    )


def test_operator_edit_goes_through_the_review_queue_to_an_applied_replacement(signed_in):
    records = reverse("admin:reward_memory_memoryrecord_changelist")
    queue = reverse("admin:reward_memory_reviewqueueitem_changelist")
    record = MemoryRecord.objects.filter(
        corpus__corpus_id="loopx-demo-turn-admission", lifecycle_state="active"
    ).first()
    edited = "Re-read the acceptance criteria and the last validation before a new Todo."
    edit = signed_in.post(
        records,
        {
            "action": "operator_edit",
            "_selected_action": [record.pk],
            "control_ref": "demo-operator-control",
            "reasoning_summary": "Tighter wording.",
            "edited_content_summary": edited,
        },
        follow=True,
    )
    (message,) = [m for m in _messages(edit) if "replacement candidate recorded" in m]
    item = OperatorControl.objects.get(action="edit")
    assert f'href="/admin/reward_memory/reviewqueueitem/?q={item.control_id}"' in message
    listed = signed_in.get(queue).content.decode()
    assert edited in listed
    assert "awaiting the reviewer" in listed
    # the reviewer edits the wording once, then accepts the revised candidate
    better = "Before a new Todo, re-read its acceptance criteria and the last validation."
    revised = signed_in.post(
        queue,
        {"action": "edit", "_selected_action": [item.pk], "edited_content_summary": better},
        follow=True,
    )
    assert any("edit recorded as review rmrv_" in m for m in _messages(revised)), _messages(revised)
    assert better in signed_in.get(queue).content.decode()
    accepted = signed_in.post(
        queue, {"action": "accept", "_selected_action": [item.pk]}, follow=True
    )
    assert any("accept recorded" in m for m in _messages(accepted)), _messages(accepted)
    again = signed_in.post(queue, {"action": "accept", "_selected_action": [item.pk]}, follow=True)
    assert any("already_reviewed" in m for m in _messages(again)), _messages(again)
    applied = signed_in.post(queue, {"action": "apply", "_selected_action": [item.pk]}, follow=True)
    assert any(
        "activated as record rmr_" in m and "exact readback verified" in m
        for m in _messages(applied)
    ), _messages(applied)
    replacement = MemoryRecord.objects.get(summary=better)
    assert replacement.lifecycle_state == "active"
    assert "applied" in signed_in.get(queue).content.decode()


def test_the_signed_in_operator_revokes_the_demo_checkpoint_in_the_admin(signed_in):
    checkpoint = AuthorityCheckpoint.objects.get(checkpoint_id="demo-core-contributor")
    response = signed_in.post(
        reverse("admin:reward_memory_authoritycheckpoint_changelist"),
        {"action": "revoke", "_selected_action": [checkpoint.pk]},
        follow=True,
    )
    assert any("revoked, 1 derived record(s) revoked" in t for t in _messages(response))
    assert MemoryRecord.objects.get(memory_class="hard_policy").lifecycle_state == "revoked"


def test_a_rerun_keeps_what_exists_and_an_existing_demo_keeps_its_owner(db):
    call_command("loopx_demo", stdout=io.StringIO())  # loaded without an operator first
    assert set(Corpus.objects.values_list("owner", flat=True)) == {"user:demo-owner"}
    owner = get_user_model().objects.get(username="demo-owner")
    assert owner.has_perm("reward_memory.revoke_authoritycheckpoint")
    revisions = dict(Corpus.objects.values_list("corpus_id", "revision"))
    call_command("loopx_demo", "--operator", "operator", stdout=io.StringIO())
    assert set(Corpus.objects.values_list("owner", flat=True)) == {"user:demo-owner"}
    assert dict(Corpus.objects.values_list("corpus_id", "revision")) == revisions
    assert AuthorityCheckpoint.objects.filter(checkpoint_id="demo-operator-control").count() == 1
