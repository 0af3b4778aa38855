"""``manage.py reward_memory …``: one JSON object on stdout, exit 2 on structured errors."""

import json

import pytest

from reward_memory.models import Corpus, IngestEvent, MemoryRecord, Review
from tests.helpers import run_cli, run_manage
from tests.reward_memory import factories as f


def _file(tmp_path, name, payload):
    path = tmp_path / name
    path.write_text(payload if isinstance(payload, str) else json.dumps(payload))
    return str(path)


def test_architecture_prints_the_contract():
    result = run_cli("reward_memory", "architecture", "--format", "json")
    assert result.code == 0
    assert result.json["schema_version"] == "reward_memory_architecture_v0"
    assert len(result.json["classes"]) == 5


def test_candidate_review_with_the_shipped_public_fixture(db):
    result = run_cli(
        "reward_memory", "candidate-review", "--case", "issue-fix-verified-contributor",
        "--decision", "accept", "--format", "json",
    )  # fmt: skip
    assert result.code == 0, result.stdout
    assert result.json["effective_decision"] == "accept"
    assert result.json["adapter_id"] == "issue_fix_maintainer_feedback"
    assert result.json["adapter"]["schema_version"] == (
        "issue_fix_reward_memory_candidate_adapter_v0"
    )
    text = run_cli(
        "reward_memory", "candidate-review", "--case", "issue-fix-unverified-contributor",
        "--decision", "accept", "--format", "text",
    )  # fmt: skip
    assert text.code == 0
    assert "effective_decision: no_write" in text.stdout
    assert "checkpoint_unverified" in text.stdout


@pytest.mark.parametrize("decision", ["accept", "edit", "reject", "no_write"])
def test_candidate_review_decisions_from_a_wrapper_file(db, corpus, tmp_path, decision):
    wrapper = {
        "candidate": f.candidate(),
        "corpus_id": "prefs",
        "reviewer": f.REVIEWER,
        "edit": {"content_summary": "Lead with the effect."},
    }
    result = run_cli(
        "reward_memory", "candidate-review", "--input", _file(tmp_path, "w.json", wrapper),
        "--decision", decision, "--execute",
    )  # fmt: skip
    assert result.code == 0, result.stdout
    assert result.json["effective_decision"] == decision
    assert Review.objects.get().effective_decision == decision


def test_register_corpus_then_ingest_then_recall_end_to_end(db, agents, tmp_path):
    spec = {
        "corpus": f.corpus_doc(agents=[("demo", "author")]),
        "standing_policy": f.policy_doc(),
    }
    path = _file(tmp_path, "corpus.json", spec)
    planned = run_cli("reward_memory", "register-corpus", "--input", path)
    assert planned.json["status"] == "planned"
    assert not Corpus.objects.exists()
    created = run_cli("reward_memory", "register-corpus", "--input", path, "--execute")
    assert created.code == 0
    assert created.json["status"] == "created"
    f.route_agents(Corpus.objects.get())  # the Agent's verified experiment routes the surface

    event = _file(tmp_path, "event.json", f.scoped_event())
    receipt = run_cli(
        "reward_memory", "ingest-event", "--goal-id", "demo", "--agent-id", "author",
        "--input", event, "--execute",
    )  # fmt: skip
    assert receipt.json["status"] == "activated"

    corpus = Corpus.objects.get()
    request = _file(tmp_path, "recall.json", f.recall_request(corpus, queries=["PR effect"]))
    result = run_cli("reward_memory", "recall", "--input", request, "--execute")
    assert result.code == 0
    assert result.json["status"] == "ok"
    application = _file(
        tmp_path,
        "application.json",
        {
            "schema_version": "reward_memory_application_v0",
            "recall_id": result.json["recall_id"],
            "decision": "apply",
            "memory_refs": [result.json["items"][0]["memory_ref"]],
            "reasoning_summary": "Fits.",
            "artifact_verification": {
                "artifact_ref": "pr:1",
                "artifact_digest": "sha256:" + "d" * 64,
                "verified": True,
            },
        },
    )
    applied = run_cli("reward_memory", "application-receipt", "--input", application, "--execute")
    assert applied.json["status"] == "applied"
    listing = run_cli("reward_memory", "corpora", "--format", "text")
    assert "query:yes" in listing.stdout
    assert "applied:yes" in listing.stdout
    text = run_cli("reward_memory", "recall", "--input", request, "--execute", "--format", "text")
    assert "Lead PR descriptions" in text.stdout


def test_apply_review_and_expire_and_reconcile_commands(db, corpus, tmp_path):
    review = run_cli(
        "reward_memory", "candidate-review", "--input", _file(tmp_path, "c.json", f.candidate()),
        "--decision", "accept", "--corpus-id", "prefs", "--reviewer", f.REVIEWER, "--execute",
    )  # fmt: skip
    review_id = review.json["review_id"]
    planned = run_cli("reward_memory", "apply-review", "--review-id", review_id, "--actor", f.OWNER)
    assert planned.json["status"] == "planned"
    applied = run_cli(
        "reward_memory", "apply-review", "--review-id", review_id, "--actor", f.OWNER, "--execute"
    )
    assert applied.json["status"] == "activated"
    assert MemoryRecord.objects.get().lifecycle_state == "active"
    assert run_cli("reward_memory", "expire-records").json["due"] == 0
    summary = run_cli(
        "reward_memory", "reconcile-ingest", "--goal-id", "demo", "--agent-id", "author"
    )
    assert summary.json["attempted"] == 0
    status = run_cli(
        "reward_memory", "experiment-status", "--goal-id", "demo", "--agent-id", "author"
    )
    assert status.json["status"] == "available"  # the factory's verified experiment


@pytest.mark.parametrize(
    ("argv", "code", "field"),
    [
        (["candidate-review", "--case", "scoped-feedback", "--input", "{event}"],
         "invalid_argument", None),
        (["candidate-review", "--case", "nope", "--decision", "accept"], "invalid_argument",
         "case"),
        (["candidate-review", "--case", "issue-fix-verified-contributor", "--decision", "maybe"],
         "invalid_argument", "decision"),
        (["ingest-event", "--input", "{missing}", "--execute"], "invalid_input_file", "input"),
        (["ingest-event", "--input", "{bad_json}"], "invalid_input_file", "input"),
        (["ingest-event", "--input", "{array}"], "invalid_input_file", "input"),
        (["ingest-event", "--input", "{event}", "--execute"], "invalid_argument", "goal_id"),
        (["recall", "--input", "{event}"], "unsupported_schema", "schema_version"),
        (["apply-review", "--review-id", "rmrv_x", "--actor", f.OWNER], "review_not_found",
         "review_id"),
        (["corpora", "--corpus-id", "nope"], "corpus_not_found", "corpus_id"),
        (["experiment-status", "--goal-id", "nope", "--agent-id", "a"], "goal_not_registered",
         "goal_id"),
    ],
)  # fmt: skip
def test_malformed_input_exits_2_with_a_structured_error(db, corpus, tmp_path, argv, code, field):
    files = {
        "missing": str(tmp_path / "does-not-exist.json"),
        "bad_json": _file(tmp_path, "bad.json", "{not json"),
        "array": _file(tmp_path, "array.json", "[1, 2]"),
        "event": _file(tmp_path, "event.json", f.scoped_event()),
    }
    argv = [a.format(**files) for a in argv]
    result = run_cli("reward_memory", *argv)
    assert result.code == 2, result.stdout
    body = json.loads(result.stdout)
    assert body["ok"] is False
    assert body["schema_version"] in ("reward_memory_error_v0", "loopx_error_v0")
    assert body["code"] == code
    if field:
        assert body["field"] == field
    assert "Traceback" not in result.stdout + result.stderr
    assert str(tmp_path) not in result.stdout


def test_stdin_input(db, corpus):
    result = run_cli(
        "reward_memory", "ingest-event", "--input", "-", stdin=json.dumps(f.scoped_event())
    )
    assert result.json["status"] == "planned"


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_real_process_ingest_is_idempotent(agents, tmp_path):
    f.register("prefs", agents=[("demo", "author")])
    # A real process uses the real clock: an observation safely in the past.
    event = _file(
        tmp_path, "event.json", f.scoped_event(source={"observed_at": "2025-01-01T00:00:00Z"})
    )
    argv = ("reward_memory", "ingest-event", "--goal-id", "demo", "--agent-id", "author",
            "--input", event, "--execute")  # fmt: skip
    first = run_manage(*argv)
    second = run_manage(*argv)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["status"] == "activated", first.stdout
    replay = json.loads(second.stdout)
    assert (replay["deduplicated"], replay["replayed"]) == (True, True)
    assert json.loads(first.stdout) == {**replay, "deduplicated": False, "replayed": False}
    assert MemoryRecord.objects.count() == 1
    assert IngestEvent.objects.get().attempts == 2
