"""Correcting a preference in the admin starts from what the journal holds (issue 34
item 4): the subjects list has a statement column, the correction form shows each
current statement and pre-fills a single subject's; the write is in "Recent actions"."""

from django.contrib.admin.models import LogEntry

from preferences.models import PreferenceSubject
from tests.preferences.test_admin_actions import CHANGELIST, SOURCE, open_form, seed, submit


def test_the_correction_form_shows_and_prefills_the_current_statement(remember, admin_client):
    (subject,) = seed(remember, keys=("review.collaboration",))
    listing = admin_client.get(CHANGELIST).content.decode()
    assert "statement" in listing.lower()
    assert subject.statement[:40] in listing
    form = admin_client.post(
        CHANGELIST, {"action": "correct_selected", "_selected_action": [subject.pk]}
    ).content.decode()
    current = form.split('class="lx-current-statement">', 1)[1].split("<", 1)[0]
    assert current == subject.statement
    textarea = form.split('name="statement"', 1)[1].split("</textarea>", 1)[0]
    assert textarea.endswith(subject.statement)
    seen = open_form(admin_client, "correct_selected", [subject])
    corrected = "Ask the designated reviewer, then the owner, before merging."
    submit(admin_client, "correct_selected", [subject], seen, statement=corrected, **SOURCE)
    assert PreferenceSubject.objects.get(pk=subject.pk).statement == corrected
    entry = LogEntry.objects.get(object_id=str(subject.pk))
    assert "Admin action: correct_selected" in entry.change_message


def test_the_subject_page_leads_with_the_statement_and_keeps_the_document_collapsed(
    remember, admin_client
):
    (subject,) = seed(remember, keys=("review.collaboration",))
    seen = open_form(admin_client, "correct_selected", [subject])
    corrected = "Ask the designated reviewer, then the owner, before merging."
    submit(admin_client, "correct_selected", [subject], seen, statement=corrected, **SOURCE)
    page = admin_client.get(f"{CHANGELIST}{subject.pk}/change/").content.decode()
    statement = page.index(f'<span class="lx-statement">{corrected}</span>')
    stored = page.index("Stored document")
    assert statement < page.index("Operations on this key") < stored
    history = page.split('<ol class="lx-history">', 1)[1].split("</ol>", 1)[0]
    assert history.count("<li>") == 2  # the first statement, then the correction, readable
    assert history.index(subject.statement) < history.index(corrected)
    assert "#1 remember" in history
    assert "#2 remember" in history
    # the wire document is still there, collapsed below, with its size in bytes
    details = page[stored - 300 :]
    assert "<details" in details
    assert "&quot;statement&quot;: " in page[stored:]
    assert " bytes" in details
