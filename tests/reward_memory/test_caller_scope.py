"""Who is calling and what they may touch (issue 20: evidence is a server record).

Every test goes through the API with real host tokens (``host_client``): a Goal-wide
token never reaches a private corpus by naming an Agent, read authority is a server
record, ``private`` means one Agent and ``goal_shared`` is its own visibility, every
403 says ``forbidden``, and an id the caller may not see answers like an absent one.
"""

import json

import pytest

from reward_memory import selectors, services
from reward_memory.documents import review as review_documents
from reward_memory.domain import privacy
from reward_memory.errors import RewardMemoryError
from reward_memory.models import ApplicationReceipt, Corpus, MemoryRecord, Review
from reward_memory.services import roles
from tests.factories import AgentFactory
from tests.helpers import run_cli
from tests.reward_memory import factories as f

BASE = "/api/v1/reward-memory"
SECRET = "Lead PR descriptions with the user-visible effect."


def _post(client, path, body):
    return client.post(f"{BASE}/{path}", data=json.dumps(body), content_type="application/json")


def _remember(corpus_id: str, goal_id="demo", agent_id="author", event_id="ev-1") -> str:
    receipt = f.ingested(
        event=f.scoped_event(event_id, corpus_id=corpus_id),
        goal_id=goal_id,
        agent_id=agent_id,
        execute=True,
    )
    assert receipt["status"] == "activated", receipt
    return receipt["record_ref"]


def _recall(client, corpus, *, agent_id="author", goal_id="demo", **overrides):
    body = {**f.recall_request(corpus, goal_id=goal_id, agent_id=agent_id), **overrides}
    return _post(client, "recall/", {**body, "execute": True})


def _verdict(response) -> tuple:
    doc = response.json()
    return (
        response.status_code,
        doc["status"],
        [r["code"] for r in doc["guard"]["reasons"]],
        doc["provider_calls"],
        doc["items"],
    )


@pytest.fixture
def private(agents, double):
    """A corpus private to demo/author on the provider double, holding one record."""
    corpus = f.register(
        "author-only", provider_id="double", visibility="private", agents=[("demo", "author")]
    )
    _remember("author-only")
    double.reset_calls()
    return corpus


# -- item 6: a Goal-wide token never reaches a private corpus by naming an Agent ----------
def test_goal_wide_token_naming_an_agent_gets_the_missing_corpus_answer_not_its_text(
    private, double, host_client
):
    goal_wide = host_client("demo")
    named = _recall(goal_wide, private, agent_id="author")
    assert SECRET not in named.content.decode()
    missing = _recall(goal_wide, private, agent_id="author", corpus_id="no-such-corpus")
    assert (
        _verdict(named)
        == _verdict(missing)
        == (
            200,
            "guard_blocked",
            ["corpus_not_registered"],
            0,
            [],
        )
    )
    assert double.call_count == 0
    # the same token's list and health route hide it the same way
    listed = goal_wide.get(f"{BASE}/corpora/").json()["corpora"]
    assert "author-only" not in [c["corpus_id"] for c in listed]
    hidden = goal_wide.get(f"{BASE}/corpora/author-only/health/")
    absent = goal_wide.get(f"{BASE}/corpora/no-such-corpus/health/")
    assert (hidden.status_code, hidden.json()) == (absent.status_code, absent.json())
    # the Agent's own token reads it
    own = _recall(host_client("demo", "author"), private)
    assert own.json()["status"] == "ok"
    assert own.json()["items"][0]["summary"] == SECRET


def test_goal_wide_token_loopx_packet_naming_an_agent_never_reaches_its_private_corpus(
    private, double, host_client
):
    from tests.reward_memory.test_loopx_contract import _loopx_packet

    packet = {**_loopx_packet(private), "agent_id": "author", "execute": True}
    response = _post(host_client("demo"), "recall/", packet)
    assert response.status_code == 200
    assert response.json()["status"] == "guard_blocked"
    assert response.json()["reason_codes"] == ["corpus_not_registered"]
    assert SECRET not in response.content.decode()
    assert double.call_count == 0


def test_a_sibling_token_sees_a_private_corpus_exactly_as_a_missing_one(
    private, double, host_client
):
    sibling = host_client("demo", "reviewer")
    hidden = _recall(sibling, private, agent_id="reviewer")
    missing = _recall(sibling, private, agent_id="reviewer", corpus_id="no-such-corpus")
    assert _verdict(hidden) == _verdict(missing)
    assert _verdict(hidden)[2] == ["corpus_not_registered"]  # not agent_not_allowlisted
    assert double.call_count == 0


def test_an_agent_token_naming_another_agent_is_forbidden(private, host_client):
    response = _recall(host_client("demo", "reviewer"), private, agent_id="author")
    assert (response.status_code, response.json()["code"]) == (403, "scope_forbidden")
    assert response.json()["status"] == "forbidden"


def test_goal_wide_token_boundary_hook_never_recalls_a_private_corpus(agents, double, host_client):
    boundary = "reviewer_artifact.summary"
    corpus = f.register(
        "review", provider_id="double", surfaces=[boundary], visibility="private",
        agents=[("demo", "author")],
    )  # fmt: skip
    f.ingested(
        event=f.scoped_event(corpus_id=corpus.corpus_id, scope={"surface": boundary}),
        goal_id="demo",
        agent_id="author",
        execute=True,
    )
    double.reset_calls()
    body = {"goal_id": "demo", "agent_id": "author", "queries": ["PR effect"], "execute": True}
    url = f"{BASE}/hooks/{boundary}/"
    goal_wide = host_client("demo").post(url, body, format="json")
    assert goal_wide.status_code == 200
    assert goal_wide.json()["context"]["guidance"] == []
    assert goal_wide.json()["provider_call_count"] == double.call_count == 0
    assert SECRET not in goal_wide.content.decode()
    own = host_client("demo", "author").post(url, body, format="json")
    assert own.json()["context"]["guidance"][0]["summary"] == SECRET


# -- item 4: read authority is a server record ------------------------------------------
@pytest.mark.parametrize(
    "ref",
    ["anything-at-all", "checkpoint:read/1", "allowlist:demo/reviewer", f.CHECKPOINT_ID],
)
def test_caller_asserted_read_authority_is_guard_blocked_before_any_provider_call(
    private, double, host_client, ref
):
    response = _recall(
        host_client("demo", "author"),
        private,
        read_authority={**f.recall_request(private)["read_authority"], "checkpoint_ref": ref},
    )
    assert _verdict(response)[:4] == (200, "guard_blocked", ["read_authority_unverified"], 0)
    assert double.call_count == 0
    assert SECRET not in response.content.decode()


def test_an_operator_granted_read_checkpoint_is_read_authority_until_revoked(
    private, double, host_client
):
    services.grant_checkpoint(
        checkpoint_id="read-author",
        project=private.project,
        actor=roles.reader_actor("demo", "author"),
        role=roles.READ_ROLE,
        action_scopes=[roles.READ_SCOPE],
        operator=f.op(f.OWNER),
        execute=True,
    )
    authority = {**f.recall_request(private)["read_authority"], "checkpoint_ref": "read-author"}
    author = host_client("demo", "author")
    granted = _recall(author, private, read_authority=authority)
    assert granted.json()["status"] == "ok"
    services.revoke_checkpoint(checkpoint_id="read-author", operator=f.op(f.OWNER), execute=True)
    double.reset_calls()
    revoked = _recall(author, private, read_authority=authority, request_id="again")
    assert _verdict(revoked)[:4] == (200, "guard_blocked", ["read_authority_unverified"], 0)
    assert double.call_count == 0


def test_a_read_checkpoint_binds_one_agent_not_its_siblings(agents, double, host_client):
    shared = f.register(
        "shared",
        provider_id="double",
        visibility="goal_shared",
        agents=[("demo", "author"), ("demo", "reviewer")],
    )
    _remember("shared")
    services.grant_checkpoint(
        checkpoint_id="read-author",
        project=shared.project,
        actor=roles.reader_actor("demo", "author"),
        role=roles.READ_ROLE,
        action_scopes=[roles.READ_SCOPE],
        operator=f.op(f.OWNER),
        execute=True,
    )
    double.reset_calls()
    authority = {**f.recall_request(shared)["read_authority"], "checkpoint_ref": "read-author"}
    borrowed = _recall(
        host_client("demo", "reviewer"), shared, agent_id="reviewer", read_authority=authority
    )
    assert _verdict(borrowed)[:4] == (200, "guard_blocked", ["read_authority_unverified"], 0)
    assert double.call_count == 0


# -- item 7: private means one Agent; goal_shared is its own visibility -----------------
def test_a_private_corpus_with_two_agents_is_refused_at_registration(agents):
    with pytest.raises(RewardMemoryError) as exc:
        f.register("two", visibility="private", agents=[("demo", "author"), ("demo", "reviewer")])
    assert (exc.value.code, exc.value.field) == ("invalid_argument", "corpus.agent_allowlist")
    assert exc.value.details["reason"] == "private_needs_exactly_one_agent"
    assert not Corpus.objects.filter(corpus_id="two").exists()
    result = run_cli(
        "reward_memory",
        "register-corpus",
        "--input",
        "-",
        "--execute",
        stdin=json.dumps(
            {
                "corpus": f.corpus_doc(
                    "two", visibility="private", agents=[("demo", "author"), ("demo", "reviewer")]
                )
            }
        ),
    )
    assert (result.code, result.json["code"]) == (2, "invalid_argument")
    assert not Corpus.objects.filter(corpus_id="two").exists()


def test_a_private_corpus_widened_behind_the_registry_is_read_by_nobody(
    private, double, host_client
):
    Corpus.objects.filter(pk=private.pk).update(agent_allowlist=["demo/author", "demo/reviewer"])
    for agent_id in ("author", "reviewer"):
        response = _recall(host_client("demo", agent_id), private, agent_id=agent_id)
        assert _verdict(response)[:4] == (200, "guard_blocked", ["corpus_not_registered"], 0)
        assert not selectors.readable_records(goal_id="demo", agent_id=agent_id).exists()
    assert double.call_count == 0


def test_goal_shared_is_read_by_its_listed_agents_only(agents, double, host_client):
    AgentFactory(goal=agents[0].goal, agent_id="third")
    shared = f.register(
        "shared",
        provider_id="double",
        visibility="goal_shared",
        agents=[("demo", "author"), ("demo", "reviewer")],
    )
    _remember("shared")
    double.reset_calls()
    for agent_id in ("author", "reviewer"):
        response = _recall(host_client("demo", agent_id), shared, agent_id=agent_id)
        assert response.json()["status"] == "ok", response.json()
    outsider = _recall(host_client("demo", "third"), shared, agent_id="third")
    assert _verdict(outsider)[:3] == (200, "guard_blocked", ["corpus_not_registered"])
    assert privacy.visibility_summary(shared) == "goal_shared: 2 Agent(s) of demo"


def test_goal_shared_spans_one_goal_and_private_never_implies_it(agents, other_goal):
    with pytest.raises(RewardMemoryError) as exc:
        f.register(
            "wide", visibility="goal_shared", agents=[("demo", "author"), ("other", "author")]
        )
    assert exc.value.details["reason"] == "goal_shared_needs_one_goal"
    with pytest.raises(RewardMemoryError) as legacy:
        f.register("old", visibility="goal", agents=[("demo", "author")])
    assert legacy.value.field == "corpus.privacy.visibility"
    private = f.register("mine", visibility="private", agents=[("demo", "author")])
    assert not privacy.may_read_corpus(private, "demo", "reviewer")
    assert not privacy.may_read_corpus(private, "demo", None)


# -- 403 answers say forbidden --------------------------------------------------------------
def test_every_403_carries_status_forbidden(agents, host_client):
    corpus = f.register("prefs", agents=[("demo", "author")], route=False)
    author = host_client("demo", "author")
    review = _post(
        author,
        "candidates/review/",
        {"candidate": f.candidate(), "decision": "accept", "corpus_id": corpus.corpus_id,
         "execute": True},
    )  # fmt: skip
    assert (review.status_code, review.json()["code"]) == (403, "reviewer_not_authorized")
    assert review.json()["status"] == "forbidden"
    ingest = _post(
        author,
        "ingest/",
        {"goal_id": "demo", "agent_id": "author", "event": f.scoped_event(), "execute": True},
    )
    assert (ingest.status_code, ingest.json()["code"]) == (403, "experiment_route_unavailable")
    assert ingest.json()["status"] == "forbidden"
    assert not MemoryRecord.objects.exists()
    assert not Review.objects.exists()
    cli = run_cli(
        "reward_memory", "reopen", "--corpus-id", "prefs", "--candidate-ref", "cand_x",
        "--actor", "user:nobody",
    )  # fmt: skip
    assert (cli.code, cli.json["status"]) == (2, "forbidden")


# -- one answer for unseen and absent ids -----------------------------------------------------
@pytest.fixture
def foreign(other_goal, agents, double, account_client):
    """A record, a recorded review and a recall that exist in Goal ``other`` only."""
    corpus = f.register("theirs", provider_id="double", agents=[("other", "author")])
    record_ref = _remember("theirs", goal_id="other")
    review = review_documents.decision(
        services.review_candidate(
            candidate=f.candidate(),
            decision="accept",
            corpus_id="theirs",
            principal=f.op(f.REVIEWER),
            execute=True,
        )
    )
    recall = f.recalled(
        request=f.recall_request(corpus, goal_id="other", agent_id="author"), execute=True
    )
    return {"record": record_ref, "review": review["review_id"], "recall": recall["recall_id"]}


def _same(a, b):
    assert (a.status_code, a.json()) == (b.status_code, b.json())
    return a


def test_review_apply_of_another_goals_review_answers_like_a_missing_one(foreign, host_client):
    author = host_client("demo", "author")
    seen = _post(author, f"reviews/{foreign['review']}/apply/", {"execute": True})
    absent = _post(author, f"reviews/rmrv_{'0' * 64}/apply/", {"execute": True})
    assert _same(seen, absent).json()["code"] == "review_not_found"


def test_record_revoke_and_supersede_of_another_goals_record_answer_like_missing_ones(
    foreign, host_client
):
    author = host_client("demo", "author")
    ghost = "rmr_" + "0" * 64
    for action, body in (
        ("revoke", {"revocation_ref": "rev-1", "execute": True}),
        ("supersede", {"by_record_ref": ghost, "execute": True}),
    ):
        seen = _post(author, f"records/{foreign['record']}/{action}/", body)
        absent = _post(author, f"records/{ghost}/{action}/", body)
        assert _same(seen, absent).json()["code"] == "record_not_found"
    assert MemoryRecord.objects.get(record_ref=foreign["record"]).lifecycle_state == "active"


def test_supersede_by_another_goals_record_answers_like_a_missing_successor(foreign, double):
    from rest_framework.test import APIClient

    from loopx_site.core import services as core_services

    f.register("prefs", provider_id="double", agents=[("demo", "author")])
    mine = _remember("prefs")
    issued = core_services.create_token(goal_id="demo", agent_id="author")
    services.bind_role(
        corpus_id="prefs", role="owner", host_token=issued.token, operator=f.op(f.OWNER)
    )
    owner = APIClient()
    owner.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.secret}")
    path = f"records/{mine}/supersede/"
    seen = _post(owner, path, {"by_record_ref": foreign["record"], "execute": True})
    absent = _post(owner, path, {"by_record_ref": "rmr_" + "0" * 64, "execute": True})
    assert _same(seen, absent).json()["code"] == "record_not_found"
    assert seen.json()["field"] == "by_record_ref"
    assert MemoryRecord.objects.get(record_ref=mine).lifecycle_state == "active"


def test_application_receipt_for_another_goals_recall_answers_like_a_missing_one(
    foreign, host_client
):
    author = host_client("demo", "author")
    document = {
        "schema_version": "reward_memory_application_v0",
        "decision": "ignore",
        "memory_refs": [],
        "reasoning_summary": "not relevant",
        "artifact_verification": {"artifact_ref": "artifact:x", "verified": False},
        "execute": True,
    }
    seen = _post(author, "application-receipts/", {**document, "recall_id": foreign["recall"]})
    absent = _post(author, "application-receipts/", {**document, "recall_id": "rmc_" + "0" * 64})
    assert _same(seen, absent).json()["code"] == "recall_not_found"
    assert not ApplicationReceipt.objects.exists()


def test_a_retire_review_naming_another_goals_record_answers_like_a_missing_one(
    foreign, double, host_client
):
    f.register("prefs", provider_id="double", agents=[("demo", "author")])
    author = host_client("demo", "author")
    body = {"candidate": f.candidate(), "decision": "retire", "corpus_id": "prefs"}
    seen = _post(author, "candidates/review/", {**body, "record_ref": foreign["record"]})
    absent = _post(author, "candidates/review/", {**body, "record_ref": "rmr_" + "0" * 64})
    assert _same(seen, absent).json()["code"] == "record_not_found"


# -- issue 33: an application receipt is the recalling Agent's own act ---------------------
def test_a_goal_wide_token_cannot_post_an_application_receipt_as_one_of_its_agents(
    double_corpus, host_client
):
    """On main a Goal-wide token recorded a receipt for ``author``'s recall, and a dogfood
    batch then counted it as ``author``'s: the verified token decides, not the recall."""
    _remember("prefs")
    recall = f.recalled(
        request=f.recall_request(double_corpus, goal_id="demo", agent_id="author"), execute=True
    )
    document = {
        "schema_version": "reward_memory_application_v0",
        "recall_id": recall["recall_id"],
        "decision": "ignore",
        "memory_refs": [],
        "reasoning_summary": "not relevant",
        "artifact_verification": {"artifact_ref": "artifact:x", "verified": False},
        "execute": True,
    }
    goal_wide = _post(host_client("demo"), "application-receipts/", document)
    assert goal_wide.status_code == 403
    assert goal_wide.json()["code"] == "scope_forbidden"
    assert not ApplicationReceipt.objects.exists()
    own = _post(host_client("demo", "author"), "application-receipts/", document)
    assert own.status_code in (200, 201), own.json()
    assert ApplicationReceipt.objects.count() == 1
