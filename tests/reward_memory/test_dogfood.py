"""Stage 5: dogfood receipts v1, batch readiness (only with the full mix), duplicate
receipts refused, typed utility observations with stable ids."""

import copy
import json

import pytest

from reward_memory import dogfood
from reward_memory.errors import RewardMemoryError
from tests.helpers import run_cli

READY_GATE = {"release_gate": {"status": "ready_for_bounded_dogfood"}}
HOLD_GATE = {"release_gate": {"status": "hold"}}
DIGEST = "sha256:" + "b" * 64


def observation(n, family="loopx", domain="loopx.turn_admission", outcome="applied", **kw):
    verified = outcome in ("applied", "refuted")
    doc = {
        "domain_family": family,
        "domain_id": domain,
        "application_receipt": {
            "schema_version": "reward_memory_application_receipt_v0",
            "application_receipt_id": f"rmar_{n}",
            "outcome": outcome,
            "artifact_ref": f"artifact:{n}",
            "corpus_id": "prefs",
            "surface_id": "issue_fix.pr_description",
            "memory_ref_digests": [DIGEST] if verified else [],
            "result_readback_verified": verified,
            "current_artifact_verified": verified,
            "grants_new_action_authority": False,
        },
        "module_outcome": {
            "artifact_ref": f"artifact:{n}",
            "outcome_verified": True,
            "outcome_ref": f"outcome:{n}",
            "outcome_status": "merged",
            "summary": "The change landed after review.",
        },
        "cost": {"latency_ms": 12, "model_tokens": 0, "provider_call_count": 2},
        "intervention": {"count": 0},
    }
    doc.update(kw)
    return doc


def full_batch():
    return {
        "observations": [
            observation(1, "issue_fix", "issue_fix.patch_planning", "applied"),
            observation(2, "loopx", "loopx.turn_admission", "not_available"),
            observation(3, "loopx", "loopx.reviewer_summary", "refuted"),
        ],
        "operator_controls": [
            {"action": "edit", "control_ref": "control:edit/1"},
            {"action": "retire", "control_ref": "control:retire/1"},
        ],
    }


def test_the_full_mix_is_ready_for_the_bounded_pilot(db):
    batch = dogfood.evaluate_batch(full_batch(), evaluation=READY_GATE)
    assert batch["schema_version"] == "reward_memory_dogfood_batch_v1"
    assert (batch["status"], batch["ready"], batch["reason_codes"]) == (
        "ready_for_bounded_issue_fix_pilot",
        True,
        [],
    )
    assert [r["application_disposition"] for r in batch["receipts"]] == [
        "applied",
        "not_applied",
        "refuted",
    ]
    assert batch["production_rollout_allowed"] is False


def _drop_issue_fix(b):
    b["observations"][0] = observation(1, "loopx", "loopx.third", "applied")


def _one_loopx_domain(b):
    b["observations"][2]["domain_id"] = "loopx.turn_admission"


def _no_refuted(b):
    b["observations"][2] = observation(3, "loopx", "loopx.reviewer_summary", "ignored")


def _no_not_applied(b):
    b["observations"][1] = observation(2, "loopx", "loopx.turn_admission", "applied")


def _no_applied(b):
    b["observations"][0] = observation(1, "issue_fix", "issue_fix.patch_planning", "failed")


def _no_edit(b):
    b["operator_controls"] = b["operator_controls"][1:]


def _no_retire(b):
    b["operator_controls"] = b["operator_controls"][:1]


@pytest.mark.parametrize(
    ("mutate", "reason", "gate"),
    [
        (_drop_issue_fix, "issue_fix_outcome_missing", READY_GATE),
        (_one_loopx_domain, "two_loopx_domains_required", READY_GATE),
        (_no_refuted, "application_disposition_missing:refuted", READY_GATE),
        (_no_not_applied, "application_disposition_missing:not_applied", READY_GATE),
        (_no_applied, "application_disposition_missing:applied", READY_GATE),
        (_no_edit, "operator_control_missing:edit", READY_GATE),
        (_no_retire, "operator_control_missing:retire", READY_GATE),
        (lambda b: None, "stage4_release_gate_not_ready", HOLD_GATE),
    ],
)
def test_each_missing_ingredient_flips_readiness(db, mutate, reason, gate):
    batch = full_batch()
    mutate(batch)
    result = dogfood.evaluate_batch(batch, evaluation=gate)
    assert result["ready"] is False
    assert result["status"] == "not_ready"
    assert result["reason_codes"] == [reason]


def test_duplicate_application_receipts_are_refused(db):
    batch = full_batch()
    batch["observations"].append(copy.deepcopy(batch["observations"][0]))
    with pytest.raises(RewardMemoryError) as exc:
        dogfood.evaluate_batch(batch, evaluation=READY_GATE)
    assert exc.value.code == "duplicate_receipt"
    assert exc.value.field == "observations.3.application_receipt.application_receipt_id"


def test_applied_needs_exact_readback_and_artifact_verification(db):
    batch = full_batch()
    batch["observations"][0]["application_receipt"]["result_readback_verified"] = False
    with pytest.raises(RewardMemoryError) as exc:
        dogfood.evaluate_batch(batch, evaluation=READY_GATE)
    assert exc.value.field == "observations.0.application_receipt.result_readback_verified"


def test_raw_fields_urls_and_paths_are_refused(db):
    for mutate, field in (
        (lambda o: o.update(raw_comment="x"), "observations.0.raw_comment"),
        (
            lambda o: o["module_outcome"].update(summary="see https://example.com/x"),
            "observations.0.module_outcome.summary",
        ),
    ):
        batch = full_batch()
        mutate(batch["observations"][0])
        with pytest.raises(RewardMemoryError) as exc:
            dogfood.evaluate_batch(batch, evaluation=READY_GATE)
        assert exc.value.field == field


UTILITY = {
    "label": "helpful",
    "evidence_basis": "owner_correction",
    "evidence_ref": "review:proj-a#12/r-2",
    "evaluator_id": "eval-x",
    "evaluation_version": "v1",
}


def test_utility_observations_are_typed_stable_and_do_not_count_toward_readiness(db):
    batch = full_batch()
    batch["observations"][0]["utility"] = dict(UTILITY)
    first = dogfood.evaluate_batch(batch, evaluation=READY_GATE)
    again = dogfood.evaluate_batch(copy.deepcopy(batch), evaluation=READY_GATE)
    u = first["receipts"][0]["utility_observation"]
    assert u["schema_version"] == "memory_utility_observation_v0"
    assert u["evidence"] == {
        "basis": "owner_correction",
        "strength": "strong",
        "evidence_ref": "review:proj-a#12/r-2",
    }
    assert u["observation_id"] == again["receipts"][0]["utility_observation"]["observation_id"]
    assert (
        first["receipts"][0]["receipt_id"]
        == dogfood.evaluate_batch(full_batch(), evaluation=READY_GATE)["receipts"][0]["receipt_id"]
    )  # the settlement id ignores utility
    assert first["ready"] is True


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"evidence_ref": None}, "observations.0.utility.evidence_ref"),
        ({"evidence_basis": "insufficient", "evidence_ref": None}, "observations.0.utility.label"),
        ({"evidence_ref": "/home/alice/notes"}, "observations.0.utility.evidence_ref"),
        ({"grants": "merge"}, "observations.0.utility.grants"),
    ],
)
def test_utility_evidence_rules(db, change, field):
    batch = full_batch()
    batch["observations"][0]["utility"] = {**UTILITY, **change}
    with pytest.raises(RewardMemoryError) as exc:
        dogfood.evaluate_batch(batch, evaluation=READY_GATE)
    assert exc.value.field == field


def test_without_evidence_the_label_is_unknown(db):
    batch = full_batch()
    batch["observations"][0]["utility"] = {
        **UTILITY, "label": "unknown", "evidence_basis": "insufficient", "evidence_ref": None,
    }  # fmt: skip
    u = dogfood.evaluate_batch(batch, evaluation=READY_GATE)["receipts"][0]["utility_observation"]
    assert (u["label"], u["evidence"]["strength"]) == ("unknown", "lineage_only")


def test_a_conflicting_judgement_under_one_observation_id_is_refused(db):
    batch = full_batch()
    batch["observations"][0]["utility"] = dict(UTILITY)
    # another settlement of the same memory and outcome, same evidence, another label
    other = copy.deepcopy(batch["observations"][0])
    other["utility"] = {**UTILITY, "label": "harmful"}
    other["application_receipt"]["application_receipt_id"] = "rmar_1b"
    batch["observations"].append(other)
    with pytest.raises(RewardMemoryError) as exc:
        dogfood.evaluate_batch(batch, evaluation=READY_GATE)
    assert (exc.value.code, exc.value.field) == (
        "utility_observation_conflict",
        "observations.3.utility",
    )


def test_dogfood_command_runs_the_live_gate(db, tmp_path):
    path = tmp_path / "batch.json"
    path.write_text(json.dumps(full_batch()))
    done = run_cli("reward_memory", "dogfood-evaluate", "--input", str(path))
    assert done.code == 0
    assert done.json["stage4_release_gate"] == "ready_for_bounded_dogfood"
    assert done.json["status"] == "ready_for_bounded_issue_fix_pilot"
    assert "Stage 4" not in done.stderr  # JSON to a pipe: no progress
    text = run_cli("reward_memory", "dogfood-evaluate", "--input", str(path), "--format", "text")
    assert "reasons: -" in text.stdout
    assert "Stage 4" in text.stderr


@pytest.mark.privacy_exempt("feeds credential-like URLs that must be refused")
@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/ghp_abcdefghijklmnopqrstuvwxyz0123456789/",
        "https://example.com/pr/1?access_token=abc",
        "https://u:p@example.com/pr/1",
    ],
)
def test_a_dogfood_artifact_url_with_a_credential_is_refused(url):
    batch = full_batch()
    first = batch["observations"][0]
    first["application_receipt"]["artifact_ref"] = url
    first["module_outcome"]["artifact_ref"] = url
    with pytest.raises(RewardMemoryError) as refused:
        dogfood.evaluate_batch(batch, evaluation=READY_GATE)
    assert refused.value.code == "invalid_argument"
    assert refused.value.field == "observations.0.application_receipt.artifact_ref"
    assert url not in json.dumps(refused.value.envelope())


def test_a_public_dogfood_artifact_url_is_kept():
    batch = full_batch()
    url = "https://github.com/owner/repo/pull/7"
    batch["observations"][0]["application_receipt"]["artifact_ref"] = url
    batch["observations"][0]["module_outcome"]["artifact_ref"] = url
    result = dogfood.evaluate_batch(batch, evaluation=READY_GATE)
    assert url in json.dumps(result)
