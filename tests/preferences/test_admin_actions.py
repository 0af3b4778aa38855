"""Admin Retire/Correct never hide a concurrent change (issue 10 item 5): the form
carries the revision the operator saw, a change that landed meanwhile is an admin error
with nothing written, and several subjects of one scope are written one operation each,
in sequence, stopping at the first refusal."""

import re

from django.contrib.messages import get_messages

from preferences import services
from preferences.models import PreferenceOperation, PreferenceSubject

CHANGELIST = "/admin/preferences/preferencesubject/"
SOURCE = {"source_ref": "operator-ticket-7", "source_quote": "Owner asked to forget it."}


def seed(remember, keys=("a.one", "b.two", "c.three")):
    for n, key in enumerate(keys):
        remember(key=key, expected=str(n) if n else "none", operation_id=f"seed-{n}")
    return [PreferenceSubject.objects.get(key=k) for k in keys]


def open_form(admin_client, action, subjects):
    form = admin_client.post(
        CHANGELIST, {"action": action, "_selected_action": [s.pk for s in subjects]}
    )
    assert form.status_code == 200
    html = form.content.decode()
    return dict(re.findall(r'name="(seen_revision_\d+)" value="([^"]*)"', html))


def submit(admin_client, action, subjects, seen, **fields):
    return admin_client.post(
        CHANGELIST,
        {
            "action": action,
            "_selected_action": [s.pk for s in subjects],
            "apply": "1",
            **seen,
            **fields,
        },
        follow=True,
    )


def messages_of(response):
    return [str(m) for m in get_messages(response.wsgi_request)]


def test_form_carries_the_revision_the_operator_saw(remember, admin_client):
    subjects = seed(remember)
    seen = open_form(admin_client, "retire_selected", subjects)
    assert seen == {f"seen_revision_{s.pk}": "3" for s in subjects}


def test_host_change_between_form_and_submit_is_a_revision_conflict_and_writes_nothing(
    remember, admin_client
):
    (subject,) = seed(remember, keys=("review.collaboration",))
    seen = open_form(admin_client, "retire_selected", [subject])
    # A host corrects the preference after the operator opened the form.
    services.remember(
        goal_id="demo",
        agent_id="author",
        key="review.collaboration",
        statement="Ask the release reviewer.",
        source_ref="owner-message-9",
        source_quote="Use the release reviewer.",
        expected_revision="1",
        operation_id="host-correction",
        execute=True,
    )
    journal = PreferenceOperation.objects.count()
    done = submit(admin_client, "retire_selected", [subject], seen, **SOURCE)
    assert done.status_code == 200
    assert any("expected_revision is not the current revision" in m for m in messages_of(done))
    assert PreferenceOperation.objects.count() == journal
    subject.refresh_from_db()
    assert subject.state == "active"
    assert subject.statement == "Ask the release reviewer."


def test_several_subjects_of_one_scope_are_one_operation_each_in_sequence(remember, admin_client):
    subjects = seed(remember)
    seen = open_form(admin_client, "retire_selected", subjects)
    done = submit(admin_client, "retire_selected", subjects, seen, **SOURCE)
    retires = list(
        PreferenceOperation.objects.filter(kind="retire")
        .order_by("sequence")
        .values_list("key", "expected_revision", "resulting_revision")
    )
    assert retires == [("a.one", 3, 4), ("b.two", 4, 5), ("c.three", 5, 6)]
    assert len([m for m in messages_of(done) if "applied at revision" in m]) == 3
    assert set(PreferenceSubject.objects.values_list("state", flat=True)) == {"retired"}


def test_the_sequence_stops_at_the_first_refusal(remember, retire, admin_client):
    subjects = seed(remember)
    seen = open_form(admin_client, "retire_selected", subjects)
    # b.two is retired by a host meanwhile: the first write already conflicts.
    retire(key="b.two", expected="3", operation_id="host-retire")
    journal = PreferenceOperation.objects.count()
    done = submit(admin_client, "retire_selected", subjects, seen, **SOURCE)
    assert PreferenceOperation.objects.count() == journal
    assert any("a.one:" in m and "current revision" in m for m in messages_of(done))
    assert PreferenceSubject.objects.get(key="c.three").state == "active"


def test_a_refusal_mid_sequence_keeps_the_earlier_writes_and_stops(remember, retire, admin_client):
    remember(key="a.one", expected="none", operation_id="s1")
    remember(key="b.two", expected="1", operation_id="s2", source_ref="operator-ticket-8")
    retire(key="b.two", expected="2", operation_id="s3")
    remember(key="c.three", expected="3", operation_id="s4")
    subjects = [PreferenceSubject.objects.get(key=k) for k in ("a.one", "b.two", "c.three")]
    seen = open_form(admin_client, "correct_selected", subjects)
    done = submit(
        admin_client,
        "correct_selected",
        subjects,
        seen,
        statement="Ask the release reviewer.",
        source_ref="operator-ticket-8",  # already used on b.two's lineage: stale_source
        source_quote="Use the release reviewer.",
    )
    corrected = PreferenceOperation.objects.filter(kind="remember", source_ref="operator-ticket-8")
    assert list(corrected.exclude(operation_id="s2").values_list("key", flat=True)) == ["a.one"]
    texts = messages_of(done)
    assert any(m.startswith("b.two:") and "fresh explicit source" in m for m in texts)
    assert any("Stopped after 1 applied operation" in m for m in texts)
    assert PreferenceSubject.objects.get(key="c.three").statement != "Ask the release reviewer."


def test_a_resubmitted_form_replays_instead_of_writing_twice(remember, admin_client):
    (subject,) = seed(remember, keys=("review.collaboration",))
    seen = open_form(admin_client, "correct_selected", [subject])
    fields = {
        "statement": "Ask the release reviewer.",
        "source_ref": "operator-ticket-8",
        "source_quote": "Use the release reviewer.",
    }
    submit(admin_client, "correct_selected", [subject], seen, **fields)
    again = submit(admin_client, "correct_selected", [subject], seen, **fields)
    assert PreferenceOperation.objects.count() == 2
    assert any("replayed" in m for m in messages_of(again))


def test_a_form_without_the_seen_revision_writes_nothing(remember, admin_client):
    (subject,) = seed(remember, keys=("review.collaboration",))
    done = submit(admin_client, "retire_selected", [subject], {}, **SOURCE)
    assert any("did not carry the revision" in m for m in messages_of(done))
    assert PreferenceOperation.objects.count() == 1
