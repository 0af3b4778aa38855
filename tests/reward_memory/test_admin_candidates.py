"""Candidates from hosts and ingest have an admin decision (issue 34 item 3): the corpus
reviewer accepts a host's candidate from the Candidates list and the owner applies the
accepted review from Reviews — each one call of the same review services."""

import pytest
from django.contrib.auth import get_user_model

from reward_memory import services
from reward_memory.documents import review as review_documents
from reward_memory.models import Candidate, MemoryRecord, Review
from tests.reward_memory import factories as f

SUMMARY = "Name the reviewer in the PR description."


@pytest.fixture
def host_candidate(db, corpus):
    review_documents.decision(
        services.review_candidate(
            candidate=f.candidate(content_summary=SUMMARY),
            decision="no_write",
            corpus_id="prefs",
            principal=f.op(f.REVIEWER),
            execute=True,
        )
    )
    return Candidate.objects.get()


def _as(client, name):
    client.force_login(get_user_model().objects.get(username=name))
    return client


def test_a_host_candidate_is_accepted_then_applied_from_the_admin(client, host_candidate):
    reviewer = _as(client, "reviewer")
    listing = reviewer.get("/admin/reward_memory/candidate/").content.decode()
    assert SUMMARY in listing  # its text, not only its ref
    response = reviewer.post(
        "/admin/reward_memory/candidate/",
        {"action": "review_accept", "_selected_action": [host_candidate.pk]},
        follow=True,
    )
    texts = [str(m) for m in response.context["messages"]]
    assert any("accept recorded as review" in t for t in texts), texts
    accepted = Review.objects.get(effective_decision="accept")
    owner = _as(client, "owner")
    response = owner.post(
        "/admin/reward_memory/review/",
        {"action": "apply_selected", "_selected_action": [accepted.pk]},
        follow=True,
    )
    texts = [str(m) for m in response.context["messages"]]
    assert any(": activated." in t for t in texts), texts
    assert MemoryRecord.objects.get(summary=SUMMARY).lifecycle_state == "active"


def _listed(client, decision: str) -> list[int]:
    response = client.get("/admin/reward_memory/candidate/", {"decision": decision})
    return [c.pk for c in response.context["cl"].result_list]


def test_an_undecided_host_candidate_is_on_the_to_do_until_the_reviewer_decides(
    client, host_candidate
):
    from reward_memory.metrics import review_todo_counts

    reviewer = _as(client, "reviewer")
    assert review_todo_counts()["candidate"] == 1
    index = reviewer.get("/admin/").content.decode()
    assert "Candidates from hosts and ingest awaiting the reviewer" in index
    assert "/admin/reward_memory/candidate/?decision=awaiting" in index
    assert _listed(reviewer, "awaiting") == [host_candidate.pk]
    assert _listed(reviewer, "decided") == []
    reviewer.post(
        "/admin/reward_memory/candidate/",
        {"action": "review_accept", "_selected_action": [host_candidate.pk]},
    )
    assert review_todo_counts()["candidate"] == 0
    assert _listed(reviewer, "awaiting") == []
    assert _listed(reviewer, "apply") == [host_candidate.pk]  # now the owner's to-do
    review = Review.objects.get(effective_decision="accept")
    _as(client, "owner").post(
        "/admin/reward_memory/review/",
        {"action": "apply_selected", "_selected_action": [review.pk]},
    )
    assert _listed(_as(client, "reviewer"), "decided") == [host_candidate.pk]


def test_awaiting_me_lists_the_reviewers_decision_then_the_owners_apply(client, host_candidate):
    assert _listed(_as(client, "reviewer"), "mine") == [host_candidate.pk]
    assert _listed(_as(client, "owner"), "mine") == []  # not the owner's turn yet
    assert _listed(_as(client, "retirer"), "mine") == []  # neither reviewer nor owner
    _as(client, "reviewer").post(
        "/admin/reward_memory/candidate/",
        {"action": "review_accept", "_selected_action": [host_candidate.pk]},
    )
    assert _listed(_as(client, "reviewer"), "mine") == []
    assert _listed(_as(client, "owner"), "mine") == [host_candidate.pk]  # now the apply waits
    review = Review.objects.get(effective_decision="accept")
    client.post(
        "/admin/reward_memory/review/",
        {"action": "apply_selected", "_selected_action": [review.pk]},
    )
    assert _listed(_as(client, "owner"), "mine") == []


def test_the_index_counts_the_candidates_awaiting_the_signed_in_operator(client, host_candidate):
    label = "Candidates awaiting me"
    index = _as(client, "reviewer").get("/admin/").content.decode()
    assert "/admin/reward_memory/candidate/?decision=mine" in index
    assert index.split(label, 1)[1].split('class="lx-todo-count">', 1)[1].startswith("1<")
    theirs = _as(client, "retirer").get("/admin/").content.decode()
    assert theirs.split(label, 1)[1].split('class="lx-todo-count">', 1)[1].startswith("0<")
