"""Messages name the caller's own input: the CLI flag as typed, the API field as sent,
the admin form's label."""

import json

import pytest
from django.urls import reverse

from tests.helpers import run_cli


@pytest.mark.django_db
def test_register_corpus_with_a_non_object_corpus_names_corpus(tmp_path):
    bad = tmp_path / "corpus.json"
    bad.write_text(json.dumps({"corpus": 1}))
    out = run_cli("reward_memory", "register-corpus", "--input", str(bad))
    assert out.code == 2
    assert (out.json["field"], out.json["error"]) == ("corpus", "corpus must be a JSON object")


@pytest.mark.django_db
def test_an_event_with_no_schema_names_schema_version_not_corpus_id(tmp_path):
    bad = tmp_path / "event.json"
    bad.write_text(json.dumps({"foo": 1}))
    out = run_cli("reward_memory", "ingest-event", "--input", str(bad))
    assert out.code == 2
    assert out.json["field"] == "schema_version"
    assert "corpus_id" not in out.json["error"]


def test_turn_recall_packet_mismatch_names_the_api_field_and_the_cli_flag(
    db, agent, host_client, tmp_path, monkeypatch
):
    from tests.factories import AgentFactory
    from turn_recall import adapters

    AgentFactory(goal=agent.goal, agent_id="reviewer")
    # turn admission on (a packet is read only then, as LoopX); refused before any recall
    binding = {"corpus_id": "turns", "project": "proj-a"}
    monkeypatch.setattr(adapters, "turn_admission_binding", lambda *a, **k: binding)
    packet = {"goal_id": "demo", "agent_id": "reviewer", "mode": "run"}
    body = {"agent_id": "author", "turn_instance_id": "t1", "quota_decision": packet}
    api = host_client("demo", "author").post("/api/v1/turn-recall/", body, format="json")
    assert api.json()["field"] == "quota_decision", api.json()
    path = tmp_path / "packet.json"
    path.write_text(json.dumps(packet))
    cli = run_cli(
        "agent_turn_recall", "--goal-id", "demo", "--agent-id", "author",
        "--turn-instance-id", "t1", "--quota-decision-json", str(path),
    )  # fmt: skip
    assert cli.json["field"] == "quota_decision_json", cli.json


def test_admin_refusals_use_the_form_labels(admin_client):
    import io

    from django.core.management import call_command

    from reward_memory.models import MemoryRecord

    call_command("loopx_demo", "--operator", "admin", stdout=io.StringIO())
    record = MemoryRecord.objects.filter(lifecycle_state="active").first()
    response = admin_client.post(
        reverse("admin:reward_memory_memoryrecord_changelist"),
        {
            "action": "operator_retire",
            "_selected_action": [record.pk],
            "control_ref": "not a ref!",
            "reasoning_summary": "why",
        },
        follow=True,
    )
    texts = [str(m) for m in response.context["messages"]]
    assert any("Checkpoint id" in t for t in texts), texts
    assert not any("control_ref" in t for t in texts), texts


def test_a_service_message_names_the_flag_on_the_cli_and_the_field_on_the_api(
    db, agent, host_client
):
    """The review service says "needs `corpus_id`": the CLI shows --corpus-id, the API
    corpus_id, and neither shows the backticks."""
    from tests.reward_memory import factories as rm

    rm.operator_accounts(("op",))
    cli = run_cli(
        "reward_memory", "candidate-review", "--decision", "accept", "--reviewer", "user:op",
        "--execute",
    )  # fmt: skip
    assert cli.code == 2
    assert (cli.json["field"], cli.json["error"]) == (
        "corpus_id",
        "recording a review needs --corpus-id",
    )
    api = host_client(agent.goal.goal_id, agent.agent_id).post(
        "/api/v1/reward-memory/candidates/review/",
        {"candidate": rm.candidate(), "decision": "accept", "execute": True},
        format="json",
    )
    assert api.status_code == 400, api.content
    assert (api.json()["field"], api.json()["error"]) == (
        "corpus_id",
        "recording a review needs corpus_id",
    )
