"""Executing quota admission (seed 004): ``quota should-run --execute`` and its API run
the turn-start hooks and Agent Turn Recall before the host gets the packet; the
read-only form stays read-only (zero writes, zero provider calls)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.helpers import run_cli
from tests.turn_recall.conftest import remember_guidance
from tests.turn_recall.test_turn_start import remember
from turn_recall.models import TurnRecallReceipt

GUIDANCE = "Re-read the acceptance criteria before resuming a flaky test fix."
URL = "/api/v1/goals/demo/agents/author/quota/should-run/"
WRITES = ("INSERT", "UPDATE", "DELETE")


def _should_run(*extra):
    return run_cli("quota", "should-run", "--goal-id", "demo", "--agent-id", "author", *extra)


def test_the_read_only_form_writes_nothing_and_calls_no_provider(db, todo, turn_corpus, double):
    remember_guidance(GUIDANCE)
    remember()
    double.reset_calls()
    with CaptureQueriesContext(connection) as queries:
        plain = _should_run()
        with_turn = _should_run("--turn-instance-id", "turn-1")
    assert (plain.code, with_turn.code) == (0, 0)
    assert with_turn.json["turn_instance_id"] == "turn-1"
    assert "reward_memory_recall" not in plain.json | with_turn.json
    sql = [q["sql"].lstrip().upper() for q in queries.captured_queries]
    writes = [q for q in sql if q.startswith(WRITES)]
    assert writes == []
    assert double.call_count == 0
    assert not TurnRecallReceipt.objects.exists()


def test_executing_admission_runs_the_hooks_then_the_turn_recall(db, todo, turn_corpus, double):
    remember_guidance(GUIDANCE)
    remember()
    double.reset_calls()
    out = _should_run("--turn-instance-id", "turn-1", "--execute")
    assert out.code == 0
    doc = out.json
    assert doc["execute"] is True
    assert doc["turn_start_hooks"]["results"][0]["status"] == "observed"  # hooks ran
    recall = doc["reward_memory_recall"]
    assert recall["schema_version"] == "agent_turn_recall_v0"
    assert recall["status"] == "applied"
    assert recall["situation"]["turn_instance_id"] == "turn-1"
    assert recall["context"]["guidance"][0]["content_summary"] == GUIDANCE
    assert recall["context"]["preferences"]["items"][0]["key"] == "review.collaboration"
    assert double.call_count >= 1
    assert TurnRecallReceipt.objects.count() == 1
    assert doc["quota"]["spent_units"] == 0  # admission never spends quota
    again = _should_run("--turn-instance-id", "turn-1", "--execute")
    assert again.json["reward_memory_recall"]["status"] == "replayed"


def test_executing_admission_needs_the_turn(db, todo):
    out = _should_run("--execute")
    assert out.code == 2
    assert (out.json["code"], out.json["field"]) == ("invalid_argument", "turn_instance_id")


@pytest.mark.parametrize("execute", [False, True])
def test_the_admission_api_matches_the_cli(db, todo, turn_corpus, double, host_client, execute):
    remember_guidance(GUIDANCE)
    client = host_client("demo", "author")
    body = {"turn_instance_id": "turn-1", "execute": execute}
    api = client.post(URL, body, format="json")
    assert api.status_code == 200
    doc = api.json()
    assert doc["turn_instance_id"] == "turn-1"
    assert ("reward_memory_recall" in doc) is execute
    assert TurnRecallReceipt.objects.exists() is execute
    assert client.post(URL, {"execute": True}, format="json").status_code == 400
    assert host_client("demo", "reviewer").post(URL, body, format="json").status_code == 403
