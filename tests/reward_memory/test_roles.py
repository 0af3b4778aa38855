"""Roles from server records: a source ``actor`` / ``actor_role`` in an event or candidate
is a claim; it counts only when a server record binds that actor to that role (a live
operator-granted checkpoint of the project, the authenticated operator account, or a
corpus role an operator bound to the calling host token). The recorded actor is the
bound one."""

import json

import pytest
from rest_framework.test import APIClient

from loopx_site.core import services as core_services
from reward_memory import selectors, services
from reward_memory.documents import review as review_documents
from reward_memory.models import IngestEvent, MemoryRecord, PendingIngest
from tests.reward_memory import factories as f

BASE = "/api/v1/reward-memory"
OPERATOR_CHOICE = {"kind": "operator_choice", "actor": "user:operator", "actor_role": "operator"}


def _post(client, path, body):
    return client.post(f"{BASE}/{path}", data=json.dumps(body), content_type="application/json")


def _token_client(goal_id, agent_id):
    issued = core_services.create_token(goal_id=goal_id, agent_id=agent_id)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.secret}")
    return issued.token, client


@pytest.fixture
def shared(agents):
    """A project-visible corpus of demo/author and demo/reviewer whose standing policy
    pre-approves operator choices by the ``operator`` role."""
    return f.register(
        "prefs",
        agents=[("demo", "author"), ("demo", "reviewer")],
        policy_kwargs={"source_kinds": ["operator_choice"], "roles": ["operator"]},
    )


def _execute(client, event):
    body = {"goal_id": "demo", "agent_id": "author", "event": event, "execute": True}
    return _post(client, "ingest/", body)


def _codes(receipt):
    return {r["code"] for r in receipt["guard"]["reasons"]}


def test_an_agent_token_claiming_the_operator_role_is_guard_blocked_and_nothing_is_recalled(
    db, host_client, shared
):
    author = host_client("demo", "author")
    response = _execute(author, f.scoped_event(source=OPERATOR_CHOICE))
    assert response.status_code == 200
    receipt = response.json()
    assert receipt["status"] == "guard_blocked"
    assert _codes(receipt) == {"actor_role_unverified"}
    assert receipt["memory_available_for_recall"] is False
    assert receipt["provider_call_count"] == 0
    assert not MemoryRecord.objects.exists()
    # the sibling Agent has nothing to recall
    assert not selectors.readable_records(goal_id="demo", agent_id="reviewer").exists()


def test_an_operator_checkpoint_binding_the_actor_to_the_role_activates_with_the_bound_actor(
    db, host_client, shared
):
    f.role_binding("user:operator", "operator", checkpoint_id="ops-role")
    receipt = _execute(host_client("demo", "author"), f.scoped_event(source=OPERATOR_CHOICE)).json()
    assert receipt["status"] == "activated"
    assert receipt["source_verification"] == {
        "actor": "user:operator",
        "role": "operator",
        "basis": "authority_checkpoint",
        "ref": "ops-role",
    }
    record = MemoryRecord.objects.get()
    assert record.source_actor == "user:operator"
    assert record.content["source"]["role_basis"] == {
        "basis": "authority_checkpoint",
        "ref": "ops-role",
    }


def test_a_role_checkpoint_binds_only_its_own_actor_and_only_while_live(db, host_client, shared):
    f.role_binding("user:operator", "operator", checkpoint_id="ops-role")
    author = host_client("demo", "author")
    impostor = f.scoped_event("ev-2", source={**OPERATOR_CHOICE, "actor": "user:impostor"})
    assert _codes(_execute(author, impostor).json()) == {"actor_role_unverified"}
    services.revoke_checkpoint(checkpoint_id="ops-role", operator=f.op(f.OWNER), execute=True)
    later = _execute(author, f.scoped_event("ev-3", source=OPERATOR_CHOICE)).json()
    assert later["status"] == "guard_blocked"
    assert _codes(later) == {"actor_role_unverified"}
    assert not MemoryRecord.objects.exists()


def test_a_host_token_bound_to_a_corpus_role_speaks_as_that_role_and_no_one_else(db, agents):
    corpus = f.register(
        "prefs",
        agents=[("demo", "author")],
        policy_kwargs={"roles": ["authority_source"]},
    )
    token, client = _token_client("demo", "author")
    as_source = {"actor": corpus.authority_source, "actor_role": "authority_source"}
    unbound = _execute(client, f.scoped_event("ev-1", source=as_source)).json()
    assert _codes(unbound) == {"actor_role_unverified"}
    services.bind_role(
        corpus_id="prefs", role="authority_source", host_token=token, operator=f.op(f.OWNER)
    )
    bound = _execute(client, f.scoped_event("ev-2", source=as_source)).json()
    assert bound["status"] == "activated"
    assert bound["source_verification"] == {
        "actor": corpus.authority_source,
        "role": "authority_source",
        "basis": "corpus_role_binding",
        "ref": "authority_source",
    }
    assert MemoryRecord.objects.get().source_actor == corpus.authority_source
    # the bound role speaks as the corpus's declared actor, not as any name it picks
    other_name = {**as_source, "actor": "user:anyone"}
    assert _codes(_execute(client, f.scoped_event("ev-3", source=other_name)).json()) == {
        "actor_role_unverified"
    }
    assert IngestEvent.objects.get(event_ref=bound["event_ref"]).submitted_token_id == token.pk


def test_an_operator_account_is_bound_to_the_operator_role_as_itself_only(db, shared):
    mine = f.scoped_event("ev-1", source={**OPERATOR_CHOICE, "actor": f.OWNER})
    receipt = f.ingested(
        event=mine, goal_id="demo", agent_id="author", execute=True, principal=f.op(f.OWNER)
    )
    assert receipt["status"] == "activated"
    assert receipt["source_verification"]["basis"] == "operator_account"
    # without the authenticated account (the demo loader, an internal call) it is a claim
    again = f.ingested(
        event=f.scoped_event("ev-2", source={**OPERATOR_CHOICE, "actor": f.OWNER}),
        goal_id="demo",
        agent_id="author",
        execute=True,
    )
    assert _codes(again) == {"actor_role_unverified"}
    someone = f.ingested(
        event=f.scoped_event("ev-3", source=OPERATOR_CHOICE),
        goal_id="demo",
        agent_id="author",
        execute=True,
        principal=f.op(f.OWNER),
    )
    assert _codes(someone) == {"actor_role_unverified"}


def test_a_review_accept_of_an_unbound_source_collapses_to_no_write(db, corpus):
    review = review_documents.decision(
        services.review_candidate(
            candidate=f.candidate(source={"actor": "user:nobody"}),
            decision="accept",
            principal=f.op(f.REVIEWER),
            corpus_id="prefs",
            execute=True,
        )
    )
    assert review["effective_decision"] == "no_write"
    assert {r["code"] for r in review["guard"]["reasons"]} == {"actor_role_unverified"}


def test_apply_review_rechecks_the_binding_at_write_time(db, corpus):
    review = review_documents.decision(
        services.review_candidate(
            candidate=f.candidate(),
            decision="accept",
            principal=f.op(f.REVIEWER),
            corpus_id="prefs",
            execute=True,
        )
    )
    assert review["effective_decision"] == "accept"
    services.revoke_checkpoint(
        checkpoint_id=f.ROLE_CHECKPOINT_ID, operator=f.op(f.OWNER), execute=True
    )
    applied = review_documents.review_step(
        services.apply_review(review_id=review["review_id"], principal=f.op(f.OWNER), execute=True)
    )
    assert applied["status"] == "guard_blocked"
    assert {r["code"] for r in applied["guard"]["reasons"]} == {"actor_role_unverified"}
    assert not MemoryRecord.objects.filter(lifecycle_state="active").exists()


def test_a_retry_reresolves_the_submitting_tokens_binding(db, agents, double):
    corpus = f.register(
        "prefs",
        provider_id="double",
        agents=[("demo", "author")],
        policy_kwargs={"roles": ["authority_source"]},
    )
    token, client = _token_client("demo", "author")
    binding = services.bind_role(
        corpus_id="prefs", role="authority_source", host_token=token, operator=f.op(f.OWNER)
    )
    event = f.scoped_event(
        source={"actor": corpus.authority_source, "actor_role": "authority_source"}
    )
    double.available = False
    first = _execute(client, event).json()
    assert first["status"] == "provider_unavailable"
    double.available = True
    services.unbind_role(binding=binding, operator=f.op(f.OWNER))
    summary = services.reconcile_pending_ingests(goal_id="demo", agent_id="author")
    assert summary.blocked == 1
    assert not MemoryRecord.objects.filter(lifecycle_state="active").exists()
    assert PendingIngest.objects.get().resolved_at is not None


def test_the_ingest_command_binds_only_the_named_operator_account(db, shared, tmp_path):
    from tests.helpers import run_cli

    path = tmp_path / "event.json"
    path.write_text(json.dumps(f.scoped_event(source={**OPERATOR_CHOICE, "actor": f.OWNER})))
    argv = ("reward_memory", "ingest-event", "--goal-id", "demo", "--agent-id", "author")
    argv += ("--input", str(path), "--execute")
    claimed = run_cli(*argv)
    assert claimed.json["status"] == "guard_blocked"
    done = run_cli(*argv, "--actor", f.OWNER)
    assert done.json["status"] == "activated"
    assert done.json["source_verification"]["basis"] == "operator_account"
    assert run_cli(*argv, "--actor", "user:ghost").code == 2
