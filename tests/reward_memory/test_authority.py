"""Issue 9: authority is proven by the server, never asserted by the caller.

One regression test per numbered defect (over the API with real host tokens where the
defect was reached over the API), the forbidden authority families, durable decisions
and the operator surfaces (command and admin) of checkpoints.
"""

import datetime as dt
import json

import pytest
from django.urls import reverse

from loopx_site.core import services as core_services
from preferences.recall import local_provider
from reward_memory import selectors, services
from reward_memory.documents import review as review_documents
from reward_memory.domain import authority, uris
from reward_memory.errors import RewardMemoryError
from reward_memory.models import (
    AuthorityCheckpoint,
    Corpus,
    LineageClosure,
    MemoryRecord,
    Review,
    StandingPolicy,
)
from tests.helpers import run_cli
from tests.reward_memory import factories as f

BASE = "/api/v1/reward-memory"
POLICY_SCOPES = ["issue_fix.request_reproduction", "issue_fix.request_changes"]


def _post(client, path, body):
    return client.post(f"{BASE}/{path}", data=json.dumps(body), content_type="application/json")


def _hard_policy_event(event_id="hp-1", corpus_id="policy", **overrides):
    doc = f.hard_policy_candidate()
    doc.pop("schema_version")
    doc = {
        "schema_version": "scoped_feedback_reward_memory_event_v0",
        "event_id": event_id,
        "corpus_id": corpus_id,
        **doc,
    }
    return f.merge(doc, overrides)


@pytest.fixture
def policy_corpus(db, agents):
    return f.register(
        "policy",
        memory_class="hard_policy",
        agents=[("demo", "author")],
        policy_kwargs={
            "roles": ["core_contributor", "operator"],
            "action_scopes": POLICY_SCOPES,
        },
    )


def _token(goal_id, agent_id=None):
    issued = core_services.create_token(goal_id=goal_id, agent_id=agent_id)
    return issued, issued.token


def _client(secret):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def _recall_items(corpus, goal_id="demo", agent_id="author", query="reproduction storage"):
    result = f.recalled(
        request=f.recall_request(corpus, goal_id=goal_id, agent_id=agent_id, queries=[query]),
        execute=True,
    )
    return result


# -- defect 1: a caller's "verified: true" never activates a hard_policy -----------------------
def test_defect1_claimed_checkpoint_over_the_api_is_ignored_and_nothing_activates(
    db, policy_corpus, host_client
):
    author = host_client("demo", "author")
    event = _hard_policy_event(
        source={"actor": "user:anyone", "actor_role": "operator"},
        authority_checkpoint={
            "checkpoint_ref": "self-asserted",
            "verified": True,
            "actor": "user:anyone",
            "role": "operator",
            "project": f.PROJECT,
            "action_scopes": POLICY_SCOPES,
        },
    )
    response = _post(
        author,
        "ingest/",
        {"goal_id": "demo", "agent_id": "author", "event": event, "execute": True},
    )
    body = response.json()
    assert response.status_code == 200
    assert body["status"] == "guard_blocked"
    assert {r["code"] for r in body["guard"]["reasons"]} == {"checkpoint_unverified"}
    assert not MemoryRecord.objects.exists()
    # naming a real checkpoint with a different actor/role is no better
    borrowed = f.merge(event, {"authority_checkpoint": {"checkpoint_ref": f.CHECKPOINT_ID}})
    again = _post(
        author,
        "ingest/",
        {"goal_id": "demo", "agent_id": "author", "event": borrowed, "execute": True},
    ).json()
    assert {r["code"] for r in again["guard"]["reasons"]} == {
        "checkpoint_actor_mismatch",
        "checkpoint_role_mismatch",
    }
    assert not MemoryRecord.objects.exists()


def test_defect1_the_granted_checkpoint_activates_and_its_scopes_bound_the_policy(
    db, policy_corpus, host_client
):
    response = _post(
        host_client("demo", "author"),
        "ingest/",
        {"goal_id": "demo", "agent_id": "author", "event": _hard_policy_event(), "execute": True},
    )
    assert response.json()["status"] == "activated"
    record = MemoryRecord.objects.get()
    assert record.authority_checkpoint.checkpoint_id == f.CHECKPOINT_ID


def test_checkpoint_revoked_and_expired_block_with_their_reason(db, policy_corpus, frozen_clock):
    services.grant_checkpoint(
        checkpoint_id="ckpt-short",
        project=f.PROJECT,
        actor="user:maint-1",
        role="core_contributor",
        action_scopes=POLICY_SCOPES,
        operator=f.op(f.OWNER),
        expires_at=f.NOW + dt.timedelta(hours=1),
        execute=True,
    )
    services.revoke_checkpoint(checkpoint_id=f.CHECKPOINT_ID, operator=f.op(f.OWNER), execute=True)
    revoked = review_documents.decision(
        services.review_candidate(candidate=f.hard_policy_candidate(), decision="accept")
    )
    assert {r["code"] for r in revoked["guard"]["reasons"]} == {"checkpoint_revoked"}
    frozen_clock.advance(dt.timedelta(hours=2))
    short = f.hard_policy_candidate(authority_checkpoint={"checkpoint_ref": "ckpt-short"})
    expired = review_documents.decision(
        services.review_candidate(candidate=short, decision="accept")
    )
    assert {r["code"] for r in expired["guard"]["reasons"]} == {"checkpoint_expired"}
    assert expired["effective_decision"] == "no_write"


# -- defect 2: forbidden authority families ---------------------------------------------------
FAMILY_CASES = [
    ("credentials", "ci.Secrets.read"),
    ("credentials", "credential"),
    ("credentials", "vault.api_key.rotate"),
    ("repository_write", "Repo.Write"),
    ("repository_write", "github.branch_protection.edit"),
    ("merge", "review.AUTO_MERGE"),
    ("merge", "issue_fix.merge"),
    ("publish_release", "pkg.Release"),
    ("publish_release", "npm.publish"),
    ("production_deploy", "infra.prod.rollout"),
    ("production_deploy", "production.deploy"),
    ("cross_project", "issue_fix.cross_project.comment"),
    ("cross_project", "review.any-repo"),
]


@pytest.mark.parametrize(("family", "scope"), FAMILY_CASES)
def test_forbidden_family_matches_any_segment_case_insensitively(family, scope):
    assert authority.forbidden_family(scope) == family


@pytest.mark.parametrize(
    "scope", ["issue_fix.request_reproduction", "issue_fix.request_changes", "review.comment"]
)
def test_ordinary_scopes_are_not_forbidden(scope):
    assert authority.forbidden_family(scope) is None


@pytest.mark.parametrize(("family", "scope"), FAMILY_CASES)
def test_forbidden_family_is_refused_in_policies_checkpoints_and_candidates(db, family, scope):
    with pytest.raises(RewardMemoryError) as policy:
        services.register_corpus(
            corpus=f.corpus_doc("hp", memory_class="hard_policy"),
            standing_policies=[
                f.policy_doc("hp", memory_class="hard_policy", action_scopes=[scope])
            ],
            execute=True,
        )
    assert policy.value.code == "forbidden_action_scope"
    assert policy.value.details == {"family": family}
    with pytest.raises(RewardMemoryError) as grant:
        services.grant_checkpoint(
            checkpoint_id="ckpt-x",
            project=f.PROJECT,
            actor="user:maint-1",
            role="core_contributor",
            action_scopes=[scope],
            operator=f.op(f.OWNER),
            execute=True,
        )
    assert grant.value.code == "forbidden_action_scope"
    review = review_documents.decision(
        services.review_candidate(
            candidate=f.hard_policy_candidate(requested_action_scopes=[scope]), decision="accept"
        )
    )
    assert "forbidden_action_scope" in {r["code"] for r in review["guard"]["reasons"]}
    assert not Corpus.objects.filter(corpus_id="hp").exists()
    assert not AuthorityCheckpoint.objects.filter(checkpoint_id="ckpt-x").exists()


def test_defect2_standing_policy_with_write_publish_production_is_refused(db):
    with pytest.raises(RewardMemoryError) as exc:
        services.register_corpus(
            corpus=f.corpus_doc("hp", memory_class="hard_policy"),
            standing_policies=[
                f.policy_doc(
                    "hp",
                    memory_class="hard_policy",
                    action_scopes=["repo.write", "publish.release", "production.deploy"],
                )
            ],
            execute=True,
        )
    assert exc.value.code == "forbidden_action_scope"
    assert not StandingPolicy.objects.exists()


# -- defect 3: identity from authentication ------------------------------------------------------
def test_defect3_host_token_naming_the_reviewer_is_refused_until_an_operator_binds_it(db, corpus):
    issued, token = _token("demo", "author")
    client = _client(issued.secret)
    body = {
        "candidate": f.candidate(),
        "decision": "accept",
        "corpus_id": "prefs",
        "reviewer": f.REVIEWER,
        "execute": True,
    }
    refused = _post(client, "candidates/review/", body)
    assert refused.status_code == 403
    assert refused.json()["code"] == "reviewer_not_authorized"
    assert not Review.objects.exists()
    services.bind_role(corpus_id="prefs", role="reviewer", host_token=token, operator=f.op(f.OWNER))
    recorded = _post(client, "candidates/review/", body)
    assert recorded.status_code == 201
    assert recorded.json()["reviewer"] == f"host:{token.prefix}"
    # the bound reviewer is still not the owner
    applied = _post(client, f"reviews/{recorded.json()['review_id']}/apply/", {"execute": True})
    assert applied.status_code == 403
    assert applied.json()["code"] == "owner_not_authorized"
    assert not MemoryRecord.objects.exists()


def test_defect3_cli_reviewer_and_actor_must_name_operator_accounts(db, corpus, tmp_path):
    path = tmp_path / "candidate.json"
    path.write_text(json.dumps(f.candidate()))
    common = ["candidate-review", "--input", str(path), "--decision", "accept", "--corpus-id"]
    free = run_cli("reward_memory", *common, "prefs", "--reviewer", "user:nobody", "--execute")
    assert free.code == 2
    assert (free.json["code"], free.json["field"]) == ("reviewer_not_authorized", "reviewer")
    wrong = run_cli("reward_memory", *common, "prefs", "--reviewer", f.OWNER, "--execute")
    assert (wrong.code, wrong.json["code"]) == (2, "reviewer_not_authorized")
    ok = run_cli("reward_memory", *common, "prefs", "--reviewer", f.REVIEWER, "--execute")
    assert ok.code == 0, ok.stdout
    review_id = ok.json["review_id"]
    apply = ["apply-review", "--review-id", review_id, "--execute", "--actor"]
    stranger = run_cli("reward_memory", *apply, "user:mallory")
    assert (stranger.code, stranger.json["code"]) == (2, "owner_not_authorized")
    not_owner = run_cli("reward_memory", *apply, f.REVIEWER)
    assert (not_owner.code, not_owner.json["code"]) == (2, "owner_not_authorized")
    done = run_cli("reward_memory", *apply, f.OWNER)
    assert (done.code, done.json["status"]) == (0, "activated")


# -- defect 4: durable reject / retire ---------------------------------------------------------
def test_defect4_a_rejected_candidate_is_never_activated_by_ingest_over_the_api(
    db, corpus, host_client
):
    review_documents.decision(
        services.review_candidate(
            candidate=f.candidate(),
            decision="reject",
            corpus_id="prefs",
            principal=f.op(f.REVIEWER),
            execute=True,
        )
    )
    author = host_client("demo", "author")
    same = _post(
        author,
        "ingest/",
        {"goal_id": "demo", "agent_id": "author", "event": f.scoped_event(), "execute": True},
    ).json()
    assert same["status"] == "guard_blocked"
    assert {r["code"] for r in same["guard"]["reasons"]} == {"lineage_closed"}
    # a re-sourced copy of the same content is the same lineage
    reworded = f.scoped_event(
        "ev-9",
        source={"evidence_ref": "feedback:proj-a/pr/99"},
        content_summary="  LEAD PR descriptions with the user-visible   effect. ",
    )
    again = _post(
        author,
        "ingest/",
        {"goal_id": "demo", "agent_id": "author", "event": reworded, "execute": True},
    ).json()
    assert {r["code"] for r in again["guard"]["reasons"]} == {"lineage_closed"}
    assert not MemoryRecord.objects.exists()


def test_defect4_a_retired_review_record_does_not_return_under_the_standing_policy(db, corpus):
    review = review_documents.decision(
        services.review_candidate(
            candidate=f.candidate(),
            decision="accept",
            corpus_id="prefs",
            principal=f.op(f.REVIEWER),
            execute=True,
        )
    )
    applied = review_documents.review_step(
        services.apply_review(review_id=review["review_id"], principal=f.op(f.OWNER), execute=True)
    )
    services.retire_record(record_ref=applied["record_ref"], principal=f.op(f.RETIRER))
    receipt = f.ingested(event=f.scoped_event(), goal_id="demo", agent_id="author", execute=True)
    assert receipt["status"] == "guard_blocked"
    assert {r["code"] for r in receipt["guard"]["reasons"]} == {"lineage_closed"}
    accept_again = review_documents.decision(
        services.review_candidate(candidate=f.candidate(), decision="accept", corpus_id="prefs")
    )
    assert accept_again["effective_decision"] == "no_write"
    assert {r["code"] for r in accept_again["guard"]["reasons"]} == {"lineage_closed"}
    # re-applying the old accepted review cannot bring it back either
    replay = review_documents.review_step(
        services.apply_review(review_id=review["review_id"], principal=f.op(f.OWNER), execute=True)
    )
    assert replay["status"] == "guard_blocked"
    assert MemoryRecord.objects.filter(lifecycle_state="active").count() == 0


def test_only_an_operator_reopen_or_a_referencing_candidate_brings_a_lineage_back(db, corpus):
    rejected = review_documents.decision(
        services.review_candidate(
            candidate=f.candidate(),
            decision="reject",
            corpus_id="prefs",
            principal=f.op(f.REVIEWER),
            execute=True,
        )
    )
    successor = f.candidate(lineage={"prior_candidate_ref": rejected["candidate_ref"]})
    new = review_documents.decision(
        services.review_candidate(candidate=successor, decision="accept", corpus_id="prefs")
    )
    assert new["effective_decision"] == "accept"
    with pytest.raises(RewardMemoryError) as exc:
        services.reopen_lineage(
            corpus_id="prefs",
            candidate_ref=rejected["candidate_ref"],
            operator=services_principal_host(),
            execute=True,
        )
    assert exc.value.code == "operator_required"
    reopened = run_cli(
        "reward_memory", "reopen", "--corpus-id", "prefs",
        "--candidate-ref", rejected["candidate_ref"], "--actor", f.OWNER, "--execute",
    )  # fmt: skip
    assert (reopened.code, reopened.json["status"]) == (0, "reopened"), reopened.stdout
    receipt = f.ingested(event=f.scoped_event(), goal_id="demo", agent_id="author", execute=True)
    assert receipt["status"] == "activated"


def services_principal_host():
    from reward_memory.principals import HOST, Principal

    return Principal(HOST, "lxh_someone", 1)


def test_supersede_and_revoke_over_the_api_check_the_authenticated_owner(
    db, corpus, host_client, account_client
):
    first = f.ingested(
        event=f.scoped_event("ev-1"), goal_id="demo", agent_id="author", execute=True
    )
    second = f.ingested(
        event=f.scoped_event("ev-2", content_summary="Lead with the effect, then validation."),
        goal_id="demo",
        agent_id="author",
        execute=True,
    )
    host = host_client("demo", "author")
    path = f"records/{first['record_ref']}/supersede/"
    body = {"by_record_ref": second["record_ref"], "execute": True}
    assert _post(host, path, body).json()["code"] == "owner_not_authorized"
    owner = account_client("owner")
    done = _post(owner, path, body)
    assert done.status_code == 200
    assert done.json()["record"]["lifecycle_state"] == "superseded"
    revoke = f"records/{second['record_ref']}/revoke/"
    preview = _post(owner, revoke, {"revocation_ref": "revocation:2"})
    assert preview.json()["executed"] is False
    assert MemoryRecord.objects.get(record_ref=second["record_ref"]).lifecycle_state == "active"
    revoked = _post(owner, revoke, {"revocation_ref": "revocation:2", "execute": True})
    assert revoked.json()["record"]["lifecycle_state"] == "revoked"
    assert LineageClosure.objects.filter(reason="revoke").count() == 1


def test_supersede_and_revoke_commands(db, corpus):
    a = f.ingested(event=f.scoped_event("ev-1"), goal_id="demo", agent_id="author", execute=True)[
        "record_ref"
    ]
    b = f.ingested(
        event=f.scoped_event("ev-2", content_summary="Another preference entirely."),
        goal_id="demo",
        agent_id="author",
        execute=True,
    )["record_ref"]
    sup = run_cli(
        "reward_memory", "supersede-record", "--record-ref", a, "--by-record-ref", b,
        "--actor", f.OWNER, "--execute",
    )  # fmt: skip
    assert (sup.code, sup.json["record"]["lifecycle_state"]) == (0, "superseded"), sup.stdout
    denied = run_cli(
        "reward_memory", "revoke-record", "--record-ref", b, "--revocation-ref", "r",
        "--actor", f.REVIEWER, "--execute",
    )  # fmt: skip
    assert (denied.code, denied.json["code"]) == (2, "not_authorized")
    rev = run_cli(
        "reward_memory", "revoke-record", "--record-ref", b, "--revocation-ref", "r",
        "--actor", f.OWNER, "--execute",
    )  # fmt: skip
    assert (rev.code, rev.json["record"]["lifecycle_state"]) == (0, "revoked")


# -- defect 5: one privacy selector for every read path ----------------------------------------
def test_defect5_the_local_provider_reads_only_what_the_calling_goal_may_read(
    db, agents, other_goal, monkeypatch
):
    f.register("private-prefs", agents=[("demo", "author")], visibility="private")
    f.ingested(
        event=f.scoped_event(
            corpus_id="private-prefs", content_summary="Private marker preference zebra."
        ),
        goal_id="demo",
        agent_id="author",
        execute=True,
    )

    def respond():
        return local_provider.recall_response(
            surface=f.SURFACE,
            query="marker preference zebra",
            limit=5,
            context={},
            project=f.PROJECT,
        )

    monkeypatch.setenv("LOOPX_RECALL_GOAL_ID", "other")
    monkeypatch.setenv("LOOPX_RECALL_AGENT_ID", "author")
    assert "zebra" not in json.dumps(respond())
    monkeypatch.delenv("LOOPX_RECALL_GOAL_ID")
    monkeypatch.delenv("LOOPX_RECALL_AGENT_ID")
    assert "zebra" not in json.dumps(respond())  # no Goal → no documents
    monkeypatch.setenv("LOOPX_RECALL_GOAL_ID", "demo")
    monkeypatch.setenv("LOOPX_RECALL_AGENT_ID", "reviewer")  # same Goal, not allowlisted
    assert "zebra" not in json.dumps(respond())
    monkeypatch.setenv("LOOPX_RECALL_AGENT_ID", "author")
    assert "zebra" in json.dumps(respond())


def test_readable_records_respect_visibility_and_lifecycle(db, agents, other_goal):
    f.register("goal-prefs", agents=[("demo", "author")], visibility="project")
    ref = f.ingested(
        event=f.scoped_event(corpus_id="goal-prefs"),
        goal_id="demo",
        agent_id="author",
        execute=True,
    )["record_ref"]

    def refs(goal_id, agent_id):
        rows = selectors.readable_records(goal_id=goal_id, agent_id=agent_id)
        return list(rows.values_list("record_ref", flat=True))

    assert refs("demo", "author") == [ref]
    assert refs("demo", "reviewer") == [ref]  # project visibility: every Agent of the Goal
    assert refs("other", "author") == []
    assert refs(None, None) == []
    Corpus.objects.filter(corpus_id="goal-prefs").update(active=False)
    assert refs("demo", "author") == []


# -- admin: grant and revoke a checkpoint; revoked policy leaves recall ---------------------------
def test_admin_grants_a_checkpoint_through_the_add_form(admin_client, db):
    url = reverse("admin:reward_memory_authoritycheckpoint_add")
    assert admin_client.get(url).status_code == 200
    response = admin_client.post(
        url,
        {
            "checkpoint_id": "ckpt-admin",
            "project": f.PROJECT,
            "actor": "user:maint-2",
            "role": "maintainer",
            "evidence_ref": "roles:proj-a/maintainers",
            "action_scopes": "issue_fix.request_changes",
        },
    )
    assert response.status_code == 302, response.content[:2000]
    row = AuthorityCheckpoint.objects.get(checkpoint_id="ckpt-admin")
    assert (row.verified_by, row.action_scopes) == ("user:admin", ["issue_fix.request_changes"])
    refused = admin_client.post(
        url,
        {
            "checkpoint_id": "ckpt-bad",
            "project": f.PROJECT,
            "actor": "user:maint-2",
            "role": "maintainer",
            "action_scopes": "production.deploy",
        },
    )
    assert refused.status_code == 200
    assert b"forbidden_action_scope" in refused.content
    assert not AuthorityCheckpoint.objects.filter(checkpoint_id="ckpt-bad").exists()


def test_admin_revoking_a_checkpoint_removes_its_hard_policy_from_recall_at_once(
    admin_client, db, policy_corpus
):
    f.ingested(event=_hard_policy_event(), goal_id="demo", agent_id="author", execute=True)
    before = _recall_items(policy_corpus)
    assert [i["memory_class"] for i in before["items"]] == ["hard_policy"]
    checkpoint = AuthorityCheckpoint.objects.get(checkpoint_id=f.CHECKPOINT_ID)
    response = admin_client.post(
        reverse("admin:reward_memory_authoritycheckpoint_changelist"),
        {"action": "revoke", "_selected_action": [checkpoint.pk]},
    )
    assert response.status_code == 302
    checkpoint.refresh_from_db()
    assert checkpoint.revoked_at is not None
    assert checkpoint.revoked_by == "user:admin"
    record = MemoryRecord.objects.get()
    assert record.lifecycle_state == "revoked"
    assert record.revocation["reason"] == "checkpoint_revoked"
    after = _recall_items(policy_corpus, query="reproduction storage contract")
    assert after["items"] == []


def test_an_expired_checkpoint_hides_its_hard_policy_from_recall(db, policy_corpus, frozen_clock):
    services.grant_checkpoint(
        checkpoint_id="ckpt-hour",
        project=f.PROJECT,
        actor="user:maint-1",
        role="core_contributor",
        action_scopes=POLICY_SCOPES,
        operator=f.op(f.OWNER),
        expires_at=f.NOW + dt.timedelta(hours=1),
        execute=True,
    )
    event = _hard_policy_event(authority_checkpoint={"checkpoint_ref": "ckpt-hour"})
    assert (
        f.ingested(event=event, goal_id="demo", agent_id="author", execute=True)["status"]
        == "activated"
    )
    assert len(_recall_items(policy_corpus)["items"]) == 1
    frozen_clock.advance(dt.timedelta(hours=2))
    assert _recall_items(policy_corpus, query="reproduction storage again")["items"] == []


def test_checkpoint_command_grants_lists_and_revokes_only_for_operator_accounts(db):
    grant = [
        "checkpoint", "grant", "--checkpoint-id", "ckpt-cli", "--project", f.PROJECT,
        "--subject", "user:maint-3", "--role", "maintainer",
        "--action-scope", "issue_fix.request_changes",
    ]  # fmt: skip
    stranger = run_cli("reward_memory", *grant, "--actor", "user:nobody", "--execute")
    assert (stranger.code, stranger.json["code"]) == (2, "operator_required")
    preview = run_cli("reward_memory", *grant, "--actor", f.OWNER)
    assert (preview.code, preview.json["status"]) == (0, "planned")
    assert not AuthorityCheckpoint.objects.filter(checkpoint_id="ckpt-cli").exists()
    done = run_cli("reward_memory", *grant, "--actor", f.OWNER, "--execute")
    assert (done.code, done.json["status"]) == (0, "granted"), done.stdout
    listed = run_cli("reward_memory", "checkpoint", "list")
    assert "ckpt-cli" in {c["checkpoint_id"] for c in listed.json["checkpoints"]}
    revoke = ["checkpoint", "revoke", "--checkpoint-id", "ckpt-cli", "--actor", f.OWNER]
    revoked = run_cli("reward_memory", *revoke, "--execute")
    assert (revoked.code, revoked.json["status"]) == (0, "revoked")
    assert AuthorityCheckpoint.objects.get(checkpoint_id="ckpt-cli").revoked_by == "user:owner"


# -- defect 6: peers and URIs -------------------------------------------------------------------
@pytest.mark.parametrize(
    "scope_ref",
    [
        "VIKING://agent/a1/memories/x",
        "viking://Agent/a1/memories/x",
        "viking://user/u1/memories/reward_memory",
        "Viking://USER/u1/memories/x",
        "viking://user/u1/peers/",
    ],
)
def test_defect6_agent_paths_and_user_paths_without_a_peer_are_refused(db, scope_ref):
    with pytest.raises(RewardMemoryError) as exc:
        services.register_corpus(
            corpus=f.corpus_doc("ov", provider_id="openviking", scope_ref=scope_ref), execute=True
        )
    assert exc.value.field == "corpus.provider_binding.scope_ref"


def test_uri_peer_is_matched_case_insensitively_on_the_segment_and_exactly_on_the_peer():
    ref = "viking://user/u1/PEERS/peer-a/memories/x"
    assert uris.peer_of(ref) == "peer-a"
    assert uris.peer_matches(ref, "peer-a")
    assert not uris.peer_matches(ref, "peer-A")
    assert not uris.peer_matches(ref, None)
    assert uris.peer_matches("local:prefs", None)


def test_defect6_ingest_checks_the_configured_peer_before_any_provider_call(
    db, agents, double, host_client
):
    scope = "viking://user/u1/peers/peer-abc/memories/reward_memory/peer"
    f.register("peer", provider_id="double", scope_ref=scope, agents=[("demo", "author")])
    response = _post(
        host_client("demo", "author"),
        "ingest/",
        {
            "goal_id": "demo",
            "agent_id": "author",
            "event": f.scoped_event(corpus_id="peer"),
            "execute": True,
        },
    ).json()
    assert {r["code"] for r in response["guard"]["reasons"]} == {"actor_peer_mismatch"}
    assert double.call_count == 0
    f.register(
        "peer2", provider_id="double", scope_ref=scope, agents=[("demo", "author", "peer-abc")]
    )
    ok = f.ingested(
        event=f.scoped_event(corpus_id="peer2"), goal_id="demo", agent_id="author", execute=True
    )
    assert ok["status"] == "activated"


# -- defect 7: guards on the real scanner (over the API) ----------------------------------------
@pytest.mark.parametrize(
    "summary",
    [
        "the password is hunter2",
        "pass=hunter2",
        "Use sk-proj-Abc123Def456Ghi789Jkl012Mno345 for the call.",
        "See github.com/org/repo/pull/1 first.",
        "Open 10.0.0.1:8080/admin to check.",
        "Keys live in C:/Users/bob/key.pem",
        "Copy from \\\\fileserver\\share",
        "Read $HOME/.aws/credentials",
        "Token ghp_abcdefghij\u200bklmnopqrstuvwxyz0123456789 leaked",
        "ｈｔｔｐｓ：／／evil.example/x",
    ],
)
def test_defect7_unsafe_prose_is_guard_blocked_over_the_api(db, corpus, host_client, summary):
    response = _post(
        host_client("demo", "author"),
        "candidates/review/",
        {"candidate": f.candidate(content_summary=summary), "decision": "accept"},
    )
    body = response.json()
    assert response.status_code == 200
    assert body["effective_decision"] == "no_write"
    assert body["candidate"] is None
    assert summary not in response.content.decode()


# -- defect 8: other Goals get the same 404 and no digests ---------------------------------------
def test_defect8_other_goals_cannot_tell_a_corpus_exists(db, corpus, other_goal, host_client):
    stranger = host_client("other", "author")
    hidden = stranger.get(f"{BASE}/corpora/prefs/health/")
    missing = stranger.get(f"{BASE}/corpora/nope/health/")
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == missing.json()
    preview = _post(stranger, "ingest/", {"event": f.scoped_event()})
    absent = _post(stranger, "ingest/", {"event": f.scoped_event(corpus_id="nope")})
    assert preview.status_code == absent.status_code == 404
    assert preview.json() == absent.json()
    text = preview.content.decode()
    policy = StandingPolicy.objects.get()
    assert policy.policy_digest not in text
    assert corpus.provider_binding_ref not in text
    review = _post(
        stranger,
        "candidates/review/",
        {"candidate": f.candidate(), "decision": "accept", "corpus_id": "prefs"},
    )
    assert review.status_code == 404
    assert review.json()["error"] == missing.json()["error"]
    recall = f.recalled(
        request=f.recall_request(corpus, goal_id="other", agent_id="author"), execute=False
    )
    assert {r["code"] for r in recall["guard"]["reasons"]} == {"corpus_not_registered"}


def test_admin_binds_a_host_token_to_a_role_and_unbinds_it(admin_client, db, corpus):
    from reward_memory.models import CorpusRoleBinding

    issued, token = _token("demo", "author")
    url = reverse("admin:reward_memory_corpusrolebinding_add")
    response = admin_client.post(
        url, {"corpus": corpus.pk, "role": "reviewer", "host_token": token.pk}
    )
    assert response.status_code == 302, response.content[:1500]
    binding = CorpusRoleBinding.objects.get()
    assert (binding.granted_by, binding.revoked_at) == ("user:admin", None)
    recorded = _post(
        _client(issued.secret),
        "candidates/review/",
        {"candidate": f.candidate(), "decision": "accept", "corpus_id": "prefs", "execute": True},
    )
    assert recorded.status_code == 201
    admin_client.post(
        reverse("admin:reward_memory_corpusrolebinding_changelist"),
        {"action": "unbind", "_selected_action": [binding.pk]},
    )
    binding.refresh_from_db()
    assert binding.revoked_at is not None
    again = _post(
        _client(issued.secret),
        "candidates/review/",
        {"candidate": f.candidate(), "decision": "reject", "corpus_id": "prefs", "execute": True},
    )
    assert again.status_code == 403


def test_admin_reopens_a_closed_lineage(admin_client, db, corpus):
    review_documents.decision(
        services.review_candidate(
            candidate=f.candidate(),
            decision="reject",
            corpus_id="prefs",
            principal=f.op(f.REVIEWER),
            execute=True,
        )
    )
    closure = LineageClosure.objects.get()
    admin_client.post(
        reverse("admin:reward_memory_lineageclosure_changelist"),
        {"action": "reopen", "_selected_action": [closure.pk]},
    )
    closure.refresh_from_db()
    assert closure.reopened_by == "user:admin"
    receipt = f.ingested(event=f.scoped_event(), goal_id="demo", agent_id="author", execute=True)
    assert receipt["status"] == "activated"
