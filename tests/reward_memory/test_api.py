"""The Reward Memory API: routes, scope, error envelopes and CLI parity."""

import json

import pytest

from reward_memory.models import ApplicationReceipt, ExperimentBinding, MemoryRecord, Review
from tests.helpers import run_cli
from tests.reward_memory import factories as f

BASE = "/api/v1/reward-memory"


def _post(client, path, body):
    return client.post(f"{BASE}/{path}", data=json.dumps(body), content_type="application/json")


@pytest.fixture
def author(host_client, corpus):
    return host_client("demo", "author")


def test_corpora_list_is_authenticated_and_scoped(
    db, api_client, operator_client, host_client, agents
):
    f.register("one", agents=[("demo", "author")], visibility="private")
    f.register("two", agents=[("demo", "reviewer")], visibility="private")
    assert api_client.get(f"{BASE}/corpora/").status_code == 401
    everything = operator_client.get(f"{BASE}/corpora/").json()
    assert [c["corpus_id"] for c in everything["corpora"]] == ["one", "two"]
    mine = host_client("demo", "author").get(f"{BASE}/corpora/").json()
    assert [c["corpus_id"] for c in mine["corpora"]] == ["one"]
    corpus = mine["corpora"][0]
    assert set(corpus["health"]) == {
        "corpus_present",
        "index_present",
        "retrieval_query_succeeded",
        "result_readback_verified",
        "memory_applied_with_receipt",
    }
    assert "scope_ref" not in json.dumps(mine)
    assert "local:one" not in json.dumps(mine)


def test_health_route_hides_corpora_outside_the_token_scope(db, host_client, agents):
    f.register("one", agents=[("demo", "author")], visibility="private")
    ok = host_client("demo", "author").get(f"{BASE}/corpora/one/health/")
    assert ok.status_code == 200
    assert ok.json()["schema_version"] == "reward_memory_corpus_health_v0"
    hidden = host_client("demo", "reviewer").get(f"{BASE}/corpora/one/health/")
    assert hidden.status_code == 404
    assert hidden.json()["schema_version"] == "reward_memory_error_v0"
    assert hidden.json()["code"] == "corpus_not_found"
    missing = host_client("demo", "author").get(f"{BASE}/corpora/nope/health/")
    assert missing.status_code == 404


def test_candidate_review_preview_and_execute(db, account_client, author):
    body = {"candidate": f.candidate(), "decision": "accept", "corpus_id": "prefs"}
    preview = _post(author, "candidates/review/", body)
    assert preview.status_code == 200
    assert preview.json()["effective_decision"] == "accept"
    assert not Review.objects.exists()
    recorded = _post(
        account_client("reviewer"),
        "candidates/review/",
        {**body, "reviewer": "user:someone-else", "execute": True},
    )
    assert recorded.status_code == 201
    assert recorded.json()["recorded"] is True
    assert recorded.json()["reviewer"] == f.REVIEWER  # the authenticated one, not the claim
    assert Review.objects.count() == 1


def test_candidate_review_bad_input_is_a_400_envelope(db, author):
    response = _post(
        author, "candidates/review/", {"candidate": f.candidate(), "decision": "maybe"}
    )
    assert response.status_code == 400
    body = response.json()
    assert body["ok"] is False
    assert body["schema_version"] == "reward_memory_error_v0"
    assert body["field"] == "decision"
    bad = _post(author, "candidates/review/", {"candidate": "text", "decision": "accept"})
    assert bad.status_code == 400
    wrong = _post(
        author,
        "candidates/review/",
        {"candidate": f.candidate(target_class="rumour"), "decision": "accept"},
    )
    assert wrong.status_code == 400
    assert wrong.json()["field"] == "target_class"


def test_candidate_review_guard_block_is_a_result_not_an_error(db, author):
    response = _post(
        author,
        "candidates/review/",
        {"candidate": f.candidate(chat="raw chat"), "decision": "accept"},
    )
    assert response.status_code == 200
    assert response.json()["effective_decision"] == "no_write"
    assert "raw chat" not in response.content.decode()


def test_host_cannot_record_reviews_for_corpora_outside_its_scope(db, host_client, agents):
    f.register("prefs", agents=[("demo", "reviewer")], visibility="private")
    response = _post(
        host_client("demo", "author"),
        "candidates/review/",
        {
            "candidate": f.candidate(),
            "decision": "accept",
            "corpus_id": "prefs",
            "reviewer": f.REVIEWER,
            "execute": True,
        },
    )
    assert response.status_code == 404
    assert not Review.objects.exists()


def test_ingest_preview_execute_and_scope(db, author, host_client):
    event = f.scoped_event()
    preview = _post(author, "ingest/", {"event": event})
    assert preview.json()["status"] == "planned"
    executed = _post(
        author,
        "ingest/",
        {"goal_id": "demo", "agent_id": "author", "event": event, "execute": True},
    )
    assert executed.status_code == 200
    assert executed.json()["status"] == "activated"
    assert MemoryRecord.objects.count() == 1
    other = host_client("demo", "reviewer")
    forbidden = _post(
        other, "ingest/", {"goal_id": "demo", "agent_id": "author", "event": event, "execute": True}
    )
    assert forbidden.status_code == 403
    assert forbidden.json()["code"] == "scope_forbidden"
    missing = _post(author, "ingest/", {"event": event, "execute": True})
    assert missing.status_code == 400


def test_ingest_refuses_unsafe_events_before_the_provider(db, author):
    event = f.scoped_event(source={"evidence_ref": "/home/alice/feedback.txt/x"})
    response = _post(
        author,
        "ingest/",
        {"goal_id": "demo", "agent_id": "author", "event": event, "execute": True},
    )
    assert response.status_code == 200
    assert response.json()["status"] == "guard_blocked"
    assert "/home/alice" not in response.content.decode()
    assert not MemoryRecord.objects.exists()


def test_recall_and_application_receipt_routes(db, author, corpus, host_client):
    _post(
        author,
        "ingest/",
        {"goal_id": "demo", "agent_id": "author", "event": f.scoped_event(), "execute": True},
    )
    request = f.recall_request(corpus, queries=["PR description effect"])
    preview = _post(author, "recall/", request)
    assert preview.json()["status"] == "preview"
    result = _post(author, "recall/", {**request, "execute": True}).json()
    assert result["status"] == "ok"
    ref = result["items"][0]["memory_ref"]
    forbidden = _post(host_client("demo", "reviewer"), "recall/", {**request, "execute": True})
    assert forbidden.status_code == 403
    application = {
        "schema_version": "reward_memory_application_v0",
        "recall_id": result["recall_id"],
        "decision": "apply",
        "memory_refs": [ref],
        "reasoning_summary": "Fits the PR.",
        "artifact_verification": {
            "artifact_ref": "pr:1",
            "artifact_digest": "sha256:" + "c" * 64,
            "verified": True,
        },
        "execute": True,
    }
    other = _post(host_client("demo", "reviewer"), "application-receipts/", application)
    assert (other.status_code, other.json()["code"]) == (404, "recall_not_found")  # unseen=absent
    created = _post(author, "application-receipts/", application)
    assert created.status_code == 201
    assert created.json()["status"] == "applied"
    assert ApplicationReceipt.objects.count() == 1
    bad_flag = _post(author, "recall/", {**request, "execute": "yes"})
    assert bad_flag.status_code == 400


def test_recall_body_must_be_an_object_and_a_goal_wide_token_must_name_an_agent(
    db, author, host_client
):
    assert _post(author, "recall/", ["x"]).status_code == 400
    body = {"schema_version": "reward_memory_recall_request_v0"}
    response = _post(author, "recall/", body)  # the Goal/Agent come from the token
    assert (response.status_code, response.json()["field"]) == (400, "corpus_id")
    goal_wide = _post(host_client("demo"), "recall/", body)
    assert (goal_wide.status_code, goal_wide.json()["field"]) == (400, "agent_id")
    typed = _post(author, "recall/", {**body, "goal_id": 7})
    assert (typed.status_code, typed.json()["field"]) == (400, "goal_id")


def test_experiment_status_is_unavailable_until_configured(db, author, host_client):
    ExperimentBinding.objects.all().delete()  # the factory's experiment
    response = author.get(f"{BASE}/experiments/demo/author/status/")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "disabled"
    assert body["available"] is False
    assert body["automation"]["automatic_recall"] is False
    assert body["automation"]["automatic_ingest"] is False
    assert author.get(f"{BASE}/experiments/other/author/status/").status_code == 403


def test_cli_and_api_give_the_same_review_and_ingest_payloads(db, author, tmp_path):
    candidate_file = tmp_path / "candidate.json"
    candidate_file.write_text(json.dumps(f.candidate()))
    cli = run_cli(
        "reward_memory",
        "candidate-review",
        "--input",
        str(candidate_file),
        "--decision",
        "accept",
        "--corpus-id",
        "prefs",
    )
    api = _post(
        author,
        "candidates/review/",
        {"candidate": f.candidate(), "decision": "accept", "corpus_id": "prefs"},
    )
    assert cli.code == 0
    assert cli.json == api.json()
    event_file = tmp_path / "event.json"
    event_file.write_text(json.dumps(f.scoped_event()))
    cli = run_cli(
        "reward_memory",
        "ingest-event",
        "--goal-id",
        "demo",
        "--agent-id",
        "author",
        "--input",
        str(event_file),
        "--execute",
    )
    api = _post(
        author,
        "ingest/",
        {"goal_id": "demo", "agent_id": "author", "event": f.scoped_event(), "execute": True},
    )
    assert cli.code == 0
    # the second (API) ingest of the same event is the stored receipt, flagged as such
    assert (api.json()["deduplicated"], api.json()["replayed"]) == (True, True)
    assert cli.json == {**api.json(), "deduplicated": False, "replayed": False}


def test_openapi_schema_lists_the_reward_memory_operations(db, operator_client):
    response = operator_client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    schema = json.loads(response.content)
    operations = {
        op["operationId"]
        for path, item in schema["paths"].items()
        if path.startswith("/api/v1/reward-memory/")
        for op in item.values()
    }
    assert operations == {
        "reward_memory_corpora_list",
        "reward_memory_corpus_health",
        "reward_memory_candidate_review",
        "reward_memory_review_apply",
        "reward_memory_record_revoke",
        "reward_memory_record_supersede",
        "reward_memory_ingest",
        "reward_memory_recall",
        "reward_memory_application_receipt",
        "reward_memory_experiment_status",
        "reward_memory_record_provider_deletion",
        "reward_memory_boundary_hook",
    }
