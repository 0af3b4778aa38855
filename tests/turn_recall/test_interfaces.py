"""CLI, API and admin adapters of turn recall (same documents as the service)."""

import json

from django.urls import reverse

from tests.factories import AgentFactory
from tests.helpers import run_cli
from tests.turn_recall.conftest import packet, remember_guidance
from turn_recall.models import TurnRecallReceipt

GUIDANCE = "Re-read the acceptance criteria before resuming a flaky test fix."
URL = "/api/v1/turn-recall/"


def _args(turn="turn-1", source="-", execute=True):
    argv = ["agent_turn_recall", "--goal-id", "demo", "--agent-id", "author",
            "--turn-instance-id", turn, "--quota-decision-json", source]  # fmt: skip
    return argv + (["--execute"] if execute else [])


def test_quota_should_run_cli_prints_the_packet(db, todo):
    out = run_cli("quota", "should-run", "--goal-id", "demo", "--agent-id", "author")
    assert out.code == 0
    assert out.json["selected_todo"]["todo_id"] == "t1"
    bad = run_cli("quota", "should-run", "--goal-id", "demo", "--agent-id", "ghost")
    assert bad.code == 2
    assert bad.json["code"] == "agent_not_registered"


def test_cli_reads_the_packet_from_stdin_and_from_a_file(db, todo, turn_corpus, tmp_path):
    remember_guidance(GUIDANCE)
    doc = json.dumps(packet())
    first = run_cli(*_args(), stdin=doc)
    assert first.code == 0
    assert first.json["status"] == "applied"
    path = tmp_path / "quota.json"
    path.write_text(doc)
    again = run_cli(*_args(source=str(path)))
    assert again.json["status"] == "replayed"
    assert again.json["provider_call_count"] == 0


def test_cli_errors_are_the_recall_document_with_exit_2(db, todo, turn_corpus):
    mismatch = run_cli(*_args(), stdin=json.dumps(packet("demo", "author") | {"agent_id": "x"}))
    assert mismatch.code == 2
    assert (mismatch.json["code"], mismatch.json["status"]) == (
        "packet_mismatch",
        "invalid_request",
    )
    assert (mismatch.json["goal_id"], mismatch.json["agent_id"]) == ("demo", "author")
    broken = run_cli(*_args(), stdin="{not json")
    assert broken.code == 2
    assert broken.json["status"] == "invalid_request"
    assert broken.json["schema_version"] == "agent_turn_recall_v0"


def test_a_bad_packet_while_disabled_is_disabled_with_exit_0_as_loopx(db, todo):
    broken = run_cli(*_args(), stdin="{not json")
    assert broken.code == 0
    assert (broken.json["status"], broken.json["provider_call_count"]) == ("disabled", 0)
    assert broken.json["experiment"]["status"] == "disabled"


def test_cli_accepts_session_ref_and_force_refresh(db, todo, turn_corpus, double):
    remember_guidance(GUIDANCE)
    doc = json.dumps(packet())
    first = run_cli(*_args(), "--session-ref", "session-1", stdin=doc)
    assert first.json["status"] == "applied"
    assert first.json["situation"]["session_ref"] == "session-1"
    plain = run_cli(*_args(), stdin=doc)  # another situation: its own recall
    assert plain.json["situation_fingerprint"] != first.json["situation_fingerprint"]
    double.reset_calls()
    again = run_cli(*_args(), "--session-ref", "session-1", "--force-refresh", stdin=doc)
    assert again.json["status"] == "applied"  # recalled again, not replayed
    assert again.json["same_turn_receipt_written"] is True
    assert again.json["turn_recall_id"] == first.json["turn_recall_id"]
    replay = run_cli(*_args(), "--session-ref", "session-1", stdin=doc)
    assert replay.json["status"] == "replayed"


def test_turn_run_once_composes_the_host_packet_with_injected_context(db, todo, turn_corpus):
    from preferences import services as pref

    remember_guidance(GUIDANCE)
    pref.remember(
        goal_id="demo", agent_id="author", key="review.collaboration",
        statement="Ask the designated reviewer before merging.", source_ref="m-1",
        source_quote="Use the reviewer.", expected_revision="none", operation_id="p-1",
        execute=True,
    )  # fmt: skip
    preview = run_cli("turn", "run-once", "--goal-id", "demo", "--agent-id", "author",
                      "--turn-instance-id", "turn-1")  # fmt: skip
    assert preview.json["agent_turn_recall"]["status"] == "preview"
    assert GUIDANCE not in preview.json["task"]["body"]
    out = run_cli("turn", "run-once", "--goal-id", "demo", "--agent-id", "author",
                  "--turn-instance-id", "turn-1", "--execute")  # fmt: skip
    assert out.code == 0
    doc = out.json
    assert doc["schema_version"] == "loopx_turn_host_packet_v0"
    body = doc["task"]["body"]
    assert "Fix the flaky test" in body
    assert GUIDANCE in body
    assert "Ask the designated reviewer before merging." in body
    assert doc["quota_spend_performed"] is False
    assert doc["required_reads"][0]["command"].split()[2:5] == [
        "semantic_preference",
        "agent",
        "read",
    ]


def test_api_takes_scope_from_the_token_never_the_body(db, todo, turn_corpus, host_client):
    remember_guidance(GUIDANCE)
    client = host_client("demo", "author")
    body = {"turn_instance_id": "turn-1", "quota_decision": packet(), "execute": True}
    ok = client.post(URL, body, format="json")
    assert ok.status_code == 200
    assert ok.json()["status"] == "applied"
    other = client.post(URL, body | {"agent_id": "reviewer"}, format="json")
    assert other.status_code == 403
    assert other.json()["code"] == "scope_forbidden"
    foreign = client.post(URL, body | {"quota_decision": packet("demo", "reviewer")}, format="json")
    assert foreign.status_code == 400
    assert foreign.json()["code"] == "packet_mismatch"
    unauth = client.__class__().post(URL, body, format="json")
    assert unauth.status_code == 401


def test_api_invalid_body_is_the_recall_document(db, todo, host_client):
    client = host_client("demo", "author")
    response = client.post(URL, {"turn_instance_id": "t", "execute": "yes"}, format="json")
    assert response.status_code == 400
    assert response.json()["schema_version"] == "agent_turn_recall_v0"
    assert response.json()["status"] == "invalid_request"


def test_quota_should_run_api_is_scoped(db, todo, host_client):
    AgentFactory(goal=todo.goal, agent_id="reviewer")
    url = "/api/v1/goals/demo/agents/author/quota/should-run/"
    ok = host_client("demo", "author").get(url)
    assert ok.status_code == 200
    assert ok.json()["selected_todo"]["todo_id"] == "t1"
    assert host_client("demo", "reviewer").get(url).status_code == 403


def test_api_and_cli_give_the_same_document(db, todo, turn_corpus, host_client):
    remember_guidance(GUIDANCE)
    doc = packet()
    api = host_client("demo", "author").post(
        URL, {"turn_instance_id": "turn-1", "quota_decision": doc}, format="json"
    )
    cli = run_cli(*_args(execute=False), stdin=json.dumps(doc))
    assert api.json() == cli.json


def test_admin_lists_receipts_read_only_without_private_text(db, todo, turn_corpus, admin_client):
    remember_guidance(GUIDANCE)
    run_cli(*_args(), stdin=json.dumps(packet()))
    row = TurnRecallReceipt.objects.get()
    url = reverse("admin:turn_recall_turnrecallreceipt_changelist")
    page = admin_client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    assert row.turn_recall_id in html
    assert GUIDANCE not in html
    detail = reverse("admin:turn_recall_turnrecallreceipt_change", args=[row.pk])
    assert admin_client.get(detail).status_code == 200
    assert admin_client.post(detail, {"status": "empty"}).status_code == 403
    assert admin_client.get(url, {"status__exact": "applied"}).status_code == 200
