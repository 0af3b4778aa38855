"""One test per guard reason code, at the level where the guard runs: candidate review,
ingest (standing policy) and recall (before the provider). A final test proves every
code in ``contracts.REASON_CODES`` is exercised here."""

import datetime as dt

import pytest

from reward_memory import contracts, services
from reward_memory.documents import review as review_documents
from reward_memory.domain import guards
from reward_memory.models import Candidate, IngestEvent, MemoryRecord, Review
from tests.reward_memory import factories as f

D = f.DELETE

# (reason code, candidate overrides, needs a registered corpus?)
CANDIDATE_CASES = [
    ("unmodelled_field", {"favourite_colour": "blue"}, False),
    ("raw_content_field", {"transcript": "user: hi"}, False),
    ("authority_field", {"provider_binding": {"scope_ref": "x"}}, False),
    ("url_not_allowed", {"content_summary": "See https://example.org/guide first."}, False),
    ("url_with_credentials", {"source": {"evidence_ref": "https://u:pw@host.example/x"}}, False),
    ("local_path", {"source": {"evidence_ref": "/home/alice/notes/feedback.txt"}}, False),
    ("credential_like_content", {"content_summary": "Use password=hunter2 for staging"}, False),
    ("content_not_compact", {"content_summary": "word " * 150}, False),
    ("scope_unbound", {"target_class": "run_bound_reward"}, False),
    ("class_mismatch", {"target_class": "procedural_experience"}, True),
    ("project_mismatch", {"scope": {"project": "proj-b"}}, True),
    ("surface_mismatch", {"scope": {"surface": "other_module.summary"}}, True),
    ("source_stale", {"source": {"observed_at": "2026-10-01T00:00:00Z"}}, "stale"),
    ("source_in_future", {"source": {"observed_at": "2027-01-01T00:00:00Z"}}, False),
    (
        "source_not_current",
        {"freshness": {"source_revision": "rev-1", "current_revision": "rev-2"}},
        False,
    ),
    ("unresolved_conflict", {"conflicts": ["conflict:proj-a/7"]}, False),
    ("already_expired", {"expires_at": "2026-11-01T00:00:00Z"}, False),
    (
        "artifact_proof_missing",
        {"artifact_proof": {"required": True, "verified": False, "artifact_ref": "pr:proj-a#3"}},
        False,
    ),
    ("advisory_requests_authority", {"requested_action_scopes": ["issue_fix.merge"]}, False),
]

HARD_POLICY_CASES = [
    ("checkpoint_missing", {"authority_checkpoint": D}),
    # the checkpoint the candidate names is the operator-granted row; its own claims
    # (verified/actor/role/project/action_scopes) are ignored
    ("checkpoint_unverified", {"authority_checkpoint": {"checkpoint_ref": "ckpt-nobody"}}),
    ("checkpoint_actor_mismatch", {"source": {"actor": "user:someone-else"}}),
    ("checkpoint_role_mismatch", {"source": {"actor_role": "maintainer"}}),
    ("checkpoint_project_mismatch", {"scope": {"project": "proj-b"}}),
    ("action_scope_unbound", {"requested_action_scopes": []}),
    (
        "action_scope_not_in_checkpoint",
        {"requested_action_scopes": ["issue_fix.request_reproduction", "release.publish"]},
    ),
    (
        "forbidden_action_scope",
        {
            "requested_action_scopes": ["credentials.read"],
            "authority_checkpoint": {"action_scopes": ["credentials.read"]},
        },
    ),
]


def _codes(review):
    return {r["code"] for r in review["guard"]["reasons"]}


@pytest.mark.parametrize(("code", "overrides", "corpus"), CANDIDATE_CASES)
def test_candidate_guard_blocks_with_reason_and_collapses_accept_to_no_write(
    db, agents, code, overrides, corpus
):
    corpus_id = None
    if corpus:
        f.register("prefs", max_age_days=14 if corpus == "stale" else None)
        corpus_id = "prefs"
    review = review_documents.decision(
        services.review_candidate(
            candidate=f.candidate(**overrides), decision="accept", corpus_id=corpus_id
        )
    )
    assert code in _codes(review)
    assert review["guard"]["status"] == "guard_blocked"
    assert review["effective_decision"] == "no_write"
    assert review["next_step"] is None
    assert review["candidate_ref"].startswith("cand_")


@pytest.mark.parametrize(("code", "overrides"), HARD_POLICY_CASES)
def test_hard_policy_checkpoint_guard_blocks(db, code, overrides):
    review = review_documents.decision(
        services.review_candidate(candidate=f.hard_policy_candidate(**overrides), decision="accept")
    )
    assert code in _codes(review)
    assert review["effective_decision"] == "no_write"


def test_valid_candidates_pass_every_guard(db):
    for doc in (f.candidate(), f.hard_policy_candidate()):
        review = review_documents.decision(
            services.review_candidate(candidate=doc, decision="accept")
        )
        assert review["guard"] == {"status": "passed", "reasons": []}
        assert review["effective_decision"] == "accept"


def test_shape_refusal_never_echoes_the_refused_values(db):
    review = review_documents.decision(
        services.review_candidate(
            candidate=f.candidate(
                transcript="secret chat", source={"evidence_ref": "/home/alice/x/y"}
            ),
            decision="accept",
        )
    )
    text = str(review)
    assert "secret chat" not in text
    assert "/home/alice" not in text
    assert review["candidate"] is None
    assert {"code": "raw_content_field", "field": "transcript"} in review["guard"]["reasons"]


# -- ingest-only guards (standing policy) --------------------------------------------------
def _ingest(event, double):
    receipt = f.ingested(event=event, goal_id="demo", agent_id="author", execute=True)
    assert double.call_count == 0, "a guard must stop before any provider call"
    assert not MemoryRecord.objects.exists()
    return {r["code"] for r in receipt["guard"]["reasons"]}, receipt


def test_standing_policy_missing_blocks_ingest(db, agents, double):
    f.register("prefs", provider_id="double", agents=[("demo", "author")], policy=False)
    codes, receipt = _ingest(f.scoped_event(), double)
    assert codes == {"standing_policy_missing"}
    assert receipt["status"] == "guard_blocked"


def test_source_kind_not_allowed_by_policy_blocks_ingest(db, double_corpus, double):
    codes, _ = _ingest(f.scoped_event(source={"kind": "user_choice"}), double)
    assert codes == {"source_kind_not_allowed"}


def test_actor_role_not_verified_by_policy_blocks_ingest(db, double_corpus, double):
    f.role_binding("user:maint-1", "drive_by")  # a real role, just not the policy's
    codes, _ = _ingest(f.scoped_event(source={"actor_role": "drive_by"}), double)
    assert codes == {"actor_role_not_allowed"}


def test_a_role_no_server_record_binds_blocks_ingest(db, double_corpus, double):
    # the policy verifies ``maintainer``, but nothing binds user:someone to it
    codes, receipt = _ingest(f.scoped_event(source={"actor": "user:someone"}), double)
    assert codes == {"actor_role_unverified"}
    assert receipt["source_verification"] is None


def test_action_scope_not_in_policy_blocks_hard_policy_ingest(db, agents, double):
    f.register(
        "policy",
        memory_class="hard_policy",
        provider_id="double",
        agents=[("demo", "author")],
        policy_kwargs={
            "roles": ["core_contributor"],
            "action_scopes": ["issue_fix.request_reproduction"],
        },
    )
    event = f.hard_policy_candidate(
        requested_action_scopes=["issue_fix.request_reproduction", "issue_fix.request_changes"]
    )
    event.pop("schema_version")
    event = {
        "schema_version": "scoped_feedback_reward_memory_event_v0",
        "event_id": "hp-1",
        "corpus_id": "policy",
        **event,
    }
    codes, _ = _ingest(event, double)
    assert codes == {"action_scope_not_in_policy"}


def test_a_retired_record_closes_its_lineage_and_ingest_never_reactivates_it(
    db, double_corpus, double
):
    first = f.ingested(
        event=f.scoped_event("ev-1"), goal_id="demo", agent_id="author", execute=True
    )
    services.retire_record(record_ref=first["record_ref"], principal=f.op(f.RETIRER))
    double.reset_calls()
    again = f.ingested(
        event=f.scoped_event("ev-2"), goal_id="demo", agent_id="author", execute=True
    )
    assert again["status"] == "guard_blocked"
    assert {r["code"] for r in again["guard"]["reasons"]} == {"lineage_closed"}
    assert again["memory_available_for_recall"] is False
    assert double.call_count == 0
    assert not IngestEvent.objects.filter(event_ref=again["event_ref"]).exists()


def test_record_closed_blocks_reactivating_an_expired_record(
    db, double_corpus, double, frozen_clock
):
    first = f.ingested(
        event=f.scoped_event("ev-1", expires_at="2026-12-02T00:00:00Z"),
        goal_id="demo",
        agent_id="author",
        execute=True,
    )
    frozen_clock.advance(dt.timedelta(days=2))
    services.expire_due_records(execute=True)
    assert MemoryRecord.objects.get(record_ref=first["record_ref"]).lifecycle_state == "expired"
    double.reset_calls()
    frozen_clock.set(f.NOW)
    again = f.ingested(
        event=f.scoped_event("ev-2", expires_at="2026-12-02T00:00:00Z"),
        goal_id="demo",
        agent_id="author",
        execute=True,
    )
    assert {r["code"] for r in again["guard"]["reasons"]} == {"record_closed"}
    assert double.call_count == 0


# -- recall guards (all stop before the provider) --------------------------------------------
RECALL_CASES = [
    ("unmodelled_field", {"include_all_corpora": True}),
    ("project_mismatch", {"project": "proj-b"}),
    ("surface_mismatch", {"surface": "other_module.summary"}),
    ("agent_not_allowlisted", {"agent_id": "reviewer"}),
    ("read_authority_missing", {"read_authority": D}),
    ("read_authority_unverified", {"read_authority": {"verified": False}}),
    ("read_authority_mismatch", {"read_authority": {"corpus_id": "other"}}),
    ("revision_mismatch", {"freshness": {"corpus_revision": 99}}),
    ("freshness_stale", {"freshness": {"observed_at": "2026-11-30T00:00:00Z"}}),
    ("unresolved_conflict", {"conflicts": ["conflict:x"]}),
    ("provider_binding_mismatch", {"provider_binding_ref": "sha256:" + "0" * 64}),
    ("query_count_invalid", {"queries": []}),
    ("query_budget_exceeded", {"queries": ["one", "two"]}),
    ("query_budget_exceeded", {"mode": "bounded_agentic_search", "queries": ["a", "b", "c", "d"]}),
    ("query_not_public_safe", {"queries": ["read /etc/passwd/now"]}),
    ("corpus_not_registered", {"corpus_id": "nope"}),
]


@pytest.mark.parametrize(("code", "overrides"), RECALL_CASES)
def test_recall_guard_stops_before_the_provider(db, double_corpus, double, code, overrides):
    result = f.recalled(request=f.recall_request(double_corpus, **overrides), execute=True)
    assert code in {r["code"] for r in result["guard"]["reasons"]}
    assert result["status"] == "guard_blocked"
    assert result["items"] == []
    assert result["provider_calls"] == 0
    assert double.call_count == 0


def test_recall_on_a_retired_corpus_stops_before_the_provider(db, double_corpus, double):
    corpus = services.set_corpus_active(corpus_id="prefs", active=False, principal=f.op(f.OWNER))
    result = f.recalled(request=f.recall_request(corpus), execute=True)
    assert {r["code"] for r in result["guard"]["reasons"]} == {"corpus_not_active"}
    assert double.call_count == 0


def test_peer_scoped_binding_uses_only_the_configured_peer(db, agents, double):
    scope = "viking://user/u1/peers/peer-abc/memories/reward_memory/peer"
    corpus = f.register(
        "peer", provider_id="double", scope_ref=scope, agents=[("demo", "author", "peer-abc")]
    )
    blocked = f.recalled(request=f.recall_request(corpus, actor_peer_id="peer-xyz"), execute=True)
    assert {r["code"] for r in blocked["guard"]["reasons"]} == {"actor_peer_mismatch"}
    assert double.call_count == 0
    ok = f.recalled(request=f.recall_request(corpus), execute=True)
    assert ok["guard"]["status"] == "passed"
    assert double.call_count == 1
    assert double.last_binding.actor_peer_id == "peer-abc"
    # no configured peer for the Agent: the URI's peer is never borrowed
    other = f.register("peer2", provider_id="double", scope_ref=scope, agents=[("demo", "author")])
    missing = f.recalled(request=f.recall_request(other), execute=True)
    assert {r["code"] for r in missing["guard"]["reasons"]} == {"actor_peer_mismatch"}
    claimed = f.recalled(request=f.recall_request(other, actor_peer_id="peer-abc"), execute=True)
    assert {r["code"] for r in claimed["guard"]["reasons"]} == {"actor_peer_mismatch"}
    assert double.call_count == 1


def test_every_reason_code_has_a_test():
    covered = {code for code, *_ in CANDIDATE_CASES + HARD_POLICY_CASES + RECALL_CASES}
    covered |= {
        "standing_policy_missing",
        "source_kind_not_allowed",
        "actor_role_not_allowed",
        "actor_role_unverified",  # also tests/reward_memory/test_roles.py
        "action_scope_not_in_policy",
        "record_closed",
        "corpus_not_active",
        "actor_peer_mismatch",
        # tests/reward_memory/test_lifecycle_gaps.py
        "weak_policy_needs_expiry",
        "weak_policy_needs_review",
        # tests/reward_memory/test_authority.py
        "checkpoint_revoked",
        "checkpoint_expired",
        "lineage_closed",
    }
    assert covered == set(contracts.REASON_CODES)


# -- scanner details ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "codes"),
    [
        ("issue:org/repo#12", set()),
        ("review:org/repo#12/r-7", set()),
        ("use 1/2 of the budget and/or retry", set()),
        ("see ~/notes", {"local_path"}),
        ("C:\\Users\\me", {"local_path"}),
        ("cat ../secrets/file", {"local_path"}),
        ("/var", {"local_path"}),
        ("ftp://host/x", {"url_not_allowed"}),
        ("https://host/x?token=abc", {"url_with_credentials", "credential_like_content"}),
        ("Bearer abcdefghijklmnopqrstuv", {"credential_like_content"}),
        ("ghp_" + "a" * 36, {"credential_like_content"}),
        ("-----BEGIN RSA PRIVATE KEY-----", {"credential_like_content"}),
    ],
)
def test_string_scanner(text, codes):
    assert {r.code for r in guards.string_reasons(text, "f")} == codes


def test_reasons_are_sorted_and_deduplicated():
    reasons = guards.normalise(
        [guards.Reason("b", "x"), guards.Reason("a", "y"), guards.Reason("b", "x")]
    )
    assert reasons == [guards.Reason("a", "y"), guards.Reason("b", "x")]


def test_guard_blocked_reviews_are_recorded_inspectable_but_write_nothing(db, agents):
    f.register("prefs")
    review = review_documents.decision(
        services.review_candidate(
            candidate=f.candidate(conflicts=["conflict:1"]),
            decision="accept",
            principal=f.op(f.REVIEWER),
            corpus_id="prefs",
            execute=True,
        )
    )
    assert review["recorded"] is True
    assert review["effective_decision"] == "no_write"
    row = Review.objects.get(review_id=review["review_id"])
    assert row.guard_status == "guard_blocked"
    assert Candidate.objects.get(candidate_ref=review["candidate_ref"]).guard_reasons == [
        {"code": "unresolved_conflict", "field": "conflicts"}
    ]
    assert not MemoryRecord.objects.exists()


def test_an_unmodelled_key_that_looks_like_a_path_is_never_echoed(db):
    review = review_documents.decision(
        services.review_candidate(
            candidate=f.candidate(**{"/home/alice/.aws/credentials": "x"}), decision="accept"
        )
    )
    assert "/home/alice" not in str(review)
    assert {"code": "unmodelled_field", "field": "<unnamed>"} in review["guard"]["reasons"]
