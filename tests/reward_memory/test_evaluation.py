"""Stage 4: the eight cases pass their gate on the real code, and fail it when a guard
is deliberately disabled (the cases can fail)."""

import dataclasses

from reward_memory import evaluation, routing
from reward_memory.documents import evaluation as documents
from reward_memory.domain import guards
from reward_memory.models import Corpus, LocalProviderDocument, MemoryRecord
from tests.helpers import run_cli


def test_the_real_code_passes_the_release_gate_and_leaves_nothing_behind(db):
    result = documents.evaluation(evaluation.evaluate())
    assert result["schema_version"] == "reward_memory_evaluation_v0"
    assert [c["case_id"] for c in result["cases"]] == list(evaluation.CASE_IDS)
    assert all(c["passed"] for c in result["cases"]), result["cases"]
    assert result["status"] == "passed"
    gate = result["release_gate"]
    assert gate["status"] == "ready_for_bounded_dogfood"
    assert gate["production_rollout_allowed"] is False
    metrics = result["metrics"]
    assert metrics["case_count"] == 8
    for name in evaluation.ZERO_METRICS:
        assert metrics[name] == 0, name
    assert metrics["model_tokens"] == 0
    assert metrics["public_evidence_bytes"] > 0
    assert not Corpus.objects.exists()  # the sandbox rolled back
    assert not MemoryRecord.objects.exists()
    assert not LocalProviderDocument.objects.exists()


def test_disabling_the_checkpoint_guard_fails_the_gate(db, monkeypatch):
    monkeypatch.setattr(guards, "hard_policy_checkpoint_reasons", lambda *a, **k: [])
    result = documents.evaluation(evaluation.evaluate())
    failed = {c["case_id"] for c in result["cases"] if not c["passed"]}
    assert "multi_person_authority_conditions" in failed
    assert result["status"] == "failed"
    assert result["release_gate"]["status"] == "hold"
    assert "case_failed:multi_person_authority_conditions" in result["release_gate"]["reason_codes"]


def test_a_route_guard_that_authorises_the_pilot_fails_the_gate(db, monkeypatch):
    real = routing.route

    def lenient(observation):
        return dataclasses.replace(real(observation), decision="pilot_fix")

    monkeypatch.setattr(routing, "route", lenient)
    result = documents.evaluation(evaluation.evaluate())
    assert result["release_gate"]["status"] == "hold"
    assert "nonzero:false_application_count" in result["release_gate"]["reason_codes"]


def test_evaluate_command_reports_progress_on_stderr_and_renders_text(db):
    done = run_cli("reward_memory", "evaluate")
    assert done.code == 0
    assert done.json["release_gate"]["status"] == "ready_for_bounded_dogfood"
    assert "[1/8]" not in done.stdout + done.stderr  # JSON to a pipe: stdout only, no progress
    text = run_cli("reward_memory", "evaluate", "--format", "text")
    assert "release_gate: ready_for_bounded_dogfood" in text.stdout
    assert "[1/8] compact_restart_survival" in text.stderr  # people get progress on stderr
    assert "[1/8]" not in text.stdout
