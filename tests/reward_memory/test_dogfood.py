"""Stage 5: dogfood receipts v1, batch readiness (only with the full mix), duplicate
receipts refused, typed utility observations with stable ids."""

import copy
import json

import pytest

from reward_memory import dogfood, evaluation, services
from reward_memory.documents import dogfood as dogfood_documents
from reward_memory.documents import operator_control as control_documents
from reward_memory.errors import RewardMemoryError
from tests.helpers import run_cli
from tests.reward_memory import factories as f

READY_GATE = evaluation.Evaluation(cases=[], metrics={}, reasons=[])
HOLD_GATE = evaluation.Evaluation(cases=[], metrics={}, reasons=["case_failed:stage4"])
DIGEST = "sha256:" + "b" * 64
OUTCOMES = {"applied": "apply", "refuted": "refute"}  # anything else: the model ignored it


def _evaluate(document, **kw):
    """The batch document of ``document``, as the command renders it."""
    return dogfood_documents.batch(dogfood.evaluate_batch(document, **kw))


def _recall(record_ref: str, n: int) -> str:
    """A stored recall receipt that read ``record_ref`` back exactly (status ok)."""
    from loopx_site.core.models import Agent
    from reward_memory.models import Corpus, RecallReceipt

    agent = Agent.objects.get(goal__goal_id="demo", agent_id="author")
    recall_id = "rmc_" + f"{n:064x}"
    RecallReceipt.objects.create(
        recall_id=recall_id,
        corpus=Corpus.objects.get(corpus_id="prefs"),
        goal=agent.goal,
        agent=agent,
        surface=f.SURFACE,
        mode="function_boundary",
        status="ok",
        query_count=1,
        result_refs=[record_ref],
        packet={},
        provider_calls=1,
        created_at=f.NOW,
    )
    return recall_id


def store_application(record_ref: str, n: int, outcome: str) -> str:
    """A stored ``ApplicationReceipt`` (``record_application --execute``) whose status
    is ``applied``, ``refuted`` or ``not_applied`` for ``outcome``."""
    decision = OUTCOMES.get(outcome, "ignore")
    receipt = f.applied(
        document={
            "schema_version": "reward_memory_application_v0",
            "recall_id": _recall(record_ref, n),
            "decision": decision,
            "memory_refs": [record_ref] if decision != "ignore" else [],
            "reasoning_summary": "The recalled preference matched the change.",
            "artifact_verification": {
                "artifact_ref": f"artifact:{n}",
                "artifact_digest": DIGEST,
                "verified": True,
            },
        },
        execute=True,
    )
    assert receipt["status"] == ("not_applied" if decision == "ignore" else outcome)
    return receipt["application_receipt_id"]


@pytest.fixture
def stored(db, corpus):
    """Stored rows of the full mix: an active record, three application receipts (one
    per disposition) and an edit and a retire operator control."""
    record_ref = f.ingested(
        event=f.scoped_event(), goal_id="demo", agent_id="author", execute=True
    )["record_ref"]
    receipts = {
        n: store_application(record_ref, n, outcome)
        for n, outcome in ((1, "applied"), (2, "not_available"), (3, "refuted"))
    }
    # an executed retire control retires its record at once (issue 33: one operation on
    # every adapter), so it acts on a second record of its own
    retired_ref = f.ingested(
        event=f.scoped_event("ev-2", content_summary="Keep PR titles under 60 characters."),
        goal_id="demo",
        agent_id="author",
        execute=True,
    )["record_ref"]
    controls = {}
    for action, actor in (("edit", f.OWNER), ("retire", f.RETIRER)):
        services.grant_checkpoint(
            checkpoint_id=f"control-{action}",
            project=f.PROJECT,
            actor=actor,
            role="corpus_" + action,
            action_scopes=[f"reward_memory.{action}.prefs"],
            operator=f.op(f.OWNER),
            execute=True,
        )
        controls[action] = services.operator_control(
            record_ref=record_ref if action == "edit" else retired_ref,
            action=action,
            control_ref=f"control-{action}",
            reasoning_summary="Current source truth supersedes this record.",
            edited_content_summary="Lead with the effect." if action == "edit" else None,
            principal=f.op(f.OWNER),
            execute=True,
        ).row.control_id
    return {
        "record_ref": record_ref,
        "retired_ref": retired_ref,
        "receipts": receipts,
        "controls": controls,
    }


def observation(stored, n, family="loopx", domain="loopx.turn_admission", outcome="applied", **kw):
    receipt_id = stored["receipts"].get(n) or store_application(stored["record_ref"], n, outcome)
    stored["receipts"][n] = receipt_id
    doc = {
        "domain_family": family,
        "domain_id": domain,
        "application_receipt": {
            "schema_version": "reward_memory_application_receipt_v0",
            "application_receipt_id": receipt_id,
            "outcome": outcome,
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


def full_batch(stored):
    return {
        "observations": [
            observation(stored, 1, "issue_fix", "issue_fix.patch_planning", "applied"),
            observation(stored, 2, "loopx", "loopx.turn_admission", "not_available"),
            observation(stored, 3, "loopx", "loopx.reviewer_summary", "refuted"),
        ],
        "operator_controls": [
            {"control_id": stored["controls"]["edit"]},
            {"control_id": stored["controls"]["retire"]},
        ],
    }


def test_the_full_mix_is_ready_for_the_bounded_pilot(db, stored):
    batch = _evaluate(full_batch(stored), evaluation=READY_GATE)
    assert batch["schema_version"] == "reward_memory_dogfood_batch_v1"
    assert (batch["status"], batch["ok"], batch["reason_codes"]) == (
        "ready_for_bounded_issue_fix_pilot",
        True,
        [],
    )
    assert [r["application_disposition"] for r in batch["receipts"]] == [
        "applied",
        "not_applied",
        "refuted",
    ]
    assert batch["boundaries"]["production_rollout_allowed"] is False
    # LoopX's layout: the sets present, the control actions, the metrics
    assert batch["application_dispositions"] == ["applied", "not_applied", "refuted"]
    assert batch["operator_controls"] == ["edit", "retire"]
    assert batch["stage4_gate_verified"] is True
    assert batch["metrics"]["receipt_count"] == len(batch["receipts"])
    assert batch["metrics"]["issue_fix_receipt_count"] >= 1


def _drop_issue_fix(b, s):
    b["observations"][0] = observation(s, 1, "loopx", "loopx.third", "applied")


def _one_loopx_domain(b, s):
    b["observations"][2]["domain_id"] = "loopx.turn_admission"


def _no_refuted(b, s):
    b["observations"][2] = observation(s, 13, "loopx", "loopx.reviewer_summary", "ignored")


def _no_not_applied(b, s):
    b["observations"][1] = observation(s, 12, "loopx", "loopx.turn_admission", "applied")


def _no_applied(b, s):
    b["observations"][0] = observation(s, 11, "issue_fix", "issue_fix.patch_planning", "failed")


def _no_edit(b, s):
    b["operator_controls"] = b["operator_controls"][1:]


def _no_retire(b, s):
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
        (lambda b, s: None, "stage4_release_gate_not_ready", HOLD_GATE),
    ],
)
def test_each_missing_ingredient_flips_readiness(db, stored, mutate, reason, gate):
    batch = full_batch(stored)
    mutate(batch, stored)
    result = _evaluate(batch, evaluation=gate)
    assert result["ok"] is False
    assert result["status"] == "hold"
    assert result["reason_codes"] == [reason]


def test_duplicate_application_receipts_are_refused(db, stored):
    batch = full_batch(stored)
    batch["observations"].append(copy.deepcopy(batch["observations"][0]))
    with pytest.raises(RewardMemoryError) as exc:
        _evaluate(batch, evaluation=READY_GATE)
    assert exc.value.code == "duplicate_receipt"
    assert exc.value.field == "observations.3.application_receipt.application_receipt_id"


def test_an_observation_cannot_override_the_stored_readback(db, stored):
    batch = full_batch(stored)
    batch["observations"][0]["application_receipt"]["result_readback_verified"] = False
    with pytest.raises(RewardMemoryError) as exc:
        _evaluate(batch, evaluation=READY_GATE)
    assert exc.value.code == "application_receipt_mismatch"
    assert exc.value.field == "observations.0.application_receipt.result_readback_verified"


def test_a_stored_not_applied_receipt_cannot_be_reported_applied(db, stored):
    batch = full_batch(stored)
    batch["observations"][1]["application_receipt"]["outcome"] = "applied"
    with pytest.raises(RewardMemoryError) as exc:
        _evaluate(batch, evaluation=READY_GATE)
    assert (exc.value.code, exc.value.field) == (
        "application_receipt_mismatch",
        "observations.1.application_receipt.outcome",
    )


def test_readback_and_artifact_verification_come_from_the_stored_rows(db, stored):
    batch = full_batch(stored)
    for o in batch["observations"]:  # the observation states nothing but the id
        o["application_receipt"] = {
            "application_receipt_id": o["application_receipt"]["application_receipt_id"]
        }
    result = _evaluate(batch, evaluation=READY_GATE)
    first = result["receipts"][0]
    assert first["verification"] == {
        "result_readback_verified": True,
        "current_artifact_verified": True,
        "source": "stored_application_receipt",
    }
    assert first["corpus_id"] == "prefs"
    assert [r["application_disposition"] for r in result["receipts"]] == [
        "applied",
        "not_applied",
        "refuted",
    ]
    # the module outcome must be the artifact the stored application verified
    batch["observations"][0]["module_outcome"]["artifact_ref"] = "artifact:other"
    with pytest.raises(RewardMemoryError) as exc:
        _evaluate(batch, evaluation=READY_GATE)
    assert exc.value.code == "application_receipt_mismatch"


def _rows():
    from reward_memory.models import ApplicationReceipt, MemoryRecord, OperatorControl

    return (
        ApplicationReceipt.objects.count(),
        OperatorControl.objects.count(),
        MemoryRecord.objects.count(),
    )


def test_a_made_up_application_receipt_is_refused_by_name_and_nothing_is_written(
    db, stored, tmp_path
):
    batch = full_batch(stored)
    batch["observations"][0]["application_receipt"]["application_receipt_id"] = (
        "totally-made-up-receipt"
    )
    before = _rows()
    with pytest.raises(RewardMemoryError) as exc:
        _evaluate(batch, evaluation=READY_GATE)
    assert (exc.value.code, exc.value.field) == (
        "application_receipt_not_found",
        "observations.0.application_receipt.application_receipt_id",
    )
    assert exc.value.details == {"application_receipt_id": "totally-made-up-receipt"}
    path = tmp_path / "batch.json"
    path.write_text(json.dumps(batch))
    done = run_cli("reward_memory", "dogfood-evaluate", "--input", str(path))
    assert done.code == 2
    assert done.json["code"] == "application_receipt_not_found"
    assert _rows() == before


def test_another_agents_application_receipt_is_refused_like_a_made_up_one(db, stored, agents):
    batch = full_batch(stored)
    with pytest.raises(RewardMemoryError) as exc:
        _evaluate(batch, evaluation=READY_GATE, viewer=("demo", "reviewer"))
    assert exc.value.code == "application_receipt_not_found"
    mine = _evaluate(batch, evaluation=READY_GATE, viewer=("demo", "author"))
    assert mine["ok"] is True


def test_an_operator_control_that_was_never_stored_is_refused_by_name(db, stored):
    batch = full_batch(stored)
    batch["operator_controls"][0] = {"control_id": "control:edit/1", "action": "edit"}
    with pytest.raises(RewardMemoryError) as exc:
        _evaluate(batch, evaluation=READY_GATE)
    assert (exc.value.code, exc.value.field) == (
        "operator_control_not_found",
        "operator_controls.0.control_id",
    )
    relabelled = full_batch(stored)
    relabelled["operator_controls"][1]["action"] = "edit"  # the stored control is a retire
    with pytest.raises(RewardMemoryError) as exc:
        _evaluate(relabelled, evaluation=READY_GATE)
    assert exc.value.code == "operator_control_mismatch"


def test_an_executed_operator_control_is_stored_once(db, stored):
    from reward_memory.models import MemoryRecord, OperatorControl

    again = control_documents.decision(
        services.operator_control(
            record_ref=stored["retired_ref"],
            action="retire",
            control_ref="control-retire",
            reasoning_summary="Current source truth supersedes this record.",
            principal=f.op(f.OWNER),
            execute=True,
        )
    )
    assert again["control_id"] == stored["controls"]["retire"]
    assert again["recorded"] is True
    assert OperatorControl.objects.filter(action="retire").count() == 1
    assert MemoryRecord.objects.get(record_ref=stored["retired_ref"]).lifecycle_state == "retired"
    with pytest.raises(RewardMemoryError) as exc:  # the record is retired: nothing to decide
        services.operator_control(
            record_ref=stored["retired_ref"],
            action="retire",
            control_ref="control-retire",
            reasoning_summary="Another reason.",
            principal=f.op(f.OWNER),
        )
    assert exc.value.code == "invalid_transition"
    assert OperatorControl.objects.count() == 2


def test_raw_fields_urls_and_paths_are_refused(db, stored):
    for mutate, field in (
        (lambda o: o.update(raw_comment="x"), "observations.0.raw_comment"),
        (
            lambda o: o["module_outcome"].update(summary="see https://example.com/x"),
            "observations.0.module_outcome.summary",
        ),
    ):
        batch = full_batch(stored)
        mutate(batch["observations"][0])
        with pytest.raises(RewardMemoryError) as exc:
            _evaluate(batch, evaluation=READY_GATE)
        assert exc.value.field == field


UTILITY = {
    "label": "helpful",
    "evidence_basis": "owner_correction",
    "evidence_ref": "review:proj-a#12/r-2",
    "evaluator_id": "eval-x",
    "evaluation_version": "v1",
}


def test_utility_observations_are_typed_stable_and_do_not_count_toward_readiness(db, stored):
    batch = full_batch(stored)
    batch["observations"][0]["utility"] = dict(UTILITY)
    first = _evaluate(batch, evaluation=READY_GATE)
    again = _evaluate(copy.deepcopy(batch), evaluation=READY_GATE)
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
        == _evaluate(full_batch(stored), evaluation=READY_GATE)["receipts"][0]["receipt_id"]
    )  # the settlement id ignores utility
    assert first["ok"] is True


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"evidence_ref": None}, "observations.0.utility.evidence_ref"),
        ({"evidence_basis": "insufficient", "evidence_ref": None}, "observations.0.utility.label"),
        ({"evidence_ref": "/home/alice/notes"}, "observations.0.utility.evidence_ref"),
        ({"grants": "merge"}, "observations.0.utility.grants"),
    ],
)
def test_a_malformed_utility_evaluation_fails_open(db, stored, change, field):
    batch = full_batch(stored)
    batch["observations"][0]["utility"] = {**UTILITY, **change}
    result = _evaluate(batch, evaluation=READY_GATE)
    assert result["ok"] is True  # the batch result and readiness are unchanged
    receipt = result["receipts"][0]
    assert receipt["utility_observation"] is None
    assert receipt["utility_evaluation"]["status"] == "malformed"
    assert receipt["utility_evaluation"]["reason"]["field"] == field
    assert (
        receipt["receipt_id"]
        == (_evaluate(full_batch(stored), evaluation=READY_GATE)["receipts"][0]["receipt_id"])
    )


@pytest.mark.parametrize("utility", [None, {"status": "timed_out"}, {"status": "missing"}])
def test_a_missing_or_timed_out_utility_evaluation_fails_open(db, stored, utility):
    batch = full_batch(stored)
    batch["observations"][0]["utility"] = utility
    result = _evaluate(batch, evaluation=READY_GATE)
    assert result["ok"] is True
    assert result["receipts"][0]["utility_observation"] is None
    assert result["receipts"][0]["utility_evaluation"]["status"] == (
        (utility or {}).get("status", "missing")
    )


def test_without_evidence_the_label_is_unknown(db, stored):
    batch = full_batch(stored)
    batch["observations"][0]["utility"] = {
        **UTILITY, "label": "unknown", "evidence_basis": "insufficient", "evidence_ref": None,
    }  # fmt: skip
    u = _evaluate(batch, evaluation=READY_GATE)["receipts"][0]["utility_observation"]
    assert (u["label"], u["evidence"]["strength"]) == ("unknown", "lineage_only")


def test_a_conflicting_judgement_under_one_observation_id_is_refused(db, stored):
    batch = full_batch(stored)
    batch["observations"][0]["utility"] = dict(UTILITY)
    # another settlement of the same memory and outcome, same evidence, another label
    other = observation(stored, 21, "issue_fix", "issue_fix.patch_planning", "applied")
    other["module_outcome"]["outcome_ref"] = "outcome:1"
    other["utility"] = {**UTILITY, "label": "harmful"}
    batch["observations"].append(other)
    with pytest.raises(RewardMemoryError) as exc:
        _evaluate(batch, evaluation=READY_GATE)
    assert (exc.value.code, exc.value.field) == (
        "utility_observation_conflict",
        "observations.3.utility",
    )


def test_dogfood_command_runs_the_live_gate(db, stored, tmp_path):
    path = tmp_path / "batch.json"
    path.write_text(json.dumps(full_batch(stored)))
    done = run_cli("reward_memory", "dogfood-evaluate", "--input", str(path))
    assert done.code == 0
    assert done.json["stage4_release_gate"] == "ready_for_bounded_dogfood"
    assert done.json["status"] == "ready_for_bounded_issue_fix_pilot"
    assert "Stage 4" not in done.stderr  # JSON to a pipe: no progress
    text = run_cli("reward_memory", "dogfood-evaluate", "--input", str(path), "--format", "text")
    assert "reasons: -" in text.stdout
    assert "Stage 4" in text.stderr


def test_the_admin_lists_stored_operator_controls_read_only(db, stored, admin_client):
    page = admin_client.get("/admin/reward_memory/operatorcontrol/")
    assert page.status_code == 200
    assert stored["controls"]["edit"] in page.content.decode()
    assert admin_client.get("/admin/reward_memory/operatorcontrol/add/").status_code == 403


@pytest.mark.privacy_exempt("feeds credential-like URLs that must be refused")
@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/ghp_abcdefghijklmnopqrstuvwxyz0123456789/",
        "https://example.com/pr/1?access_token=abc",
        "https://u:p@example.com/pr/1",
    ],
)
def test_a_dogfood_artifact_url_with_a_credential_is_refused(stored, url):
    batch = full_batch(stored)
    first = batch["observations"][0]
    first["application_receipt"]["artifact_ref"] = url
    first["module_outcome"]["artifact_ref"] = url
    with pytest.raises(RewardMemoryError) as refused:
        _evaluate(batch, evaluation=READY_GATE)
    assert refused.value.code == "invalid_argument"
    assert refused.value.field == "observations.0.application_receipt.artifact_ref"
    assert url not in json.dumps(refused.value.envelope())


def test_an_empty_batch_is_on_hold_in_loopx_layout_and_exits_2(db, tmp_path):
    # loopx/capabilities/reward_memory/dogfood.py (build_reward_memory_dogfood_batch) and
    # the leg's reward.dogfood-and-operator-control: an empty batch is evaluated, not
    # refused — ok false, status hold, every missing ingredient, exit 2, nothing written
    path = tmp_path / "empty.json"
    path.write_text(json.dumps({"observations": [], "operator_controls": []}))
    done = run_cli("reward_memory", "dogfood-evaluate", "--input", str(path))
    assert done.code == 2
    doc = done.json
    assert (doc["ok"], doc["schema_version"], doc["status"]) == (
        False,
        "reward_memory_dogfood_batch_v1",
        "hold",
    )
    assert doc["reason_codes"] == [
        "issue_fix_outcome_missing",
        "two_loopx_domains_required",
        "application_disposition_missing:applied",
        "application_disposition_missing:not_applied",
        "application_disposition_missing:refuted",
        "operator_control_missing:edit",
        "operator_control_missing:retire",
    ]
    assert doc["stage4_gate_verified"] is True
    assert (doc["loopx_domains"], doc["application_dispositions"], doc["operator_controls"]) == (
        [],
        [],
        [],
    )
    assert set(doc["metrics"].values()) == {0}
    assert len(doc["metrics"]) == 18
    assert doc["boundaries"] == {
        "semantic_uplift_claim_allowed": False,
        "production_rollout_allowed": False,
        "automatic_recall_enabled": False,
        "new_store_provider_or_scheduler_added": False,
        "operator_write_performed": False,
        "raw_content_captured": False,
    }
    assert doc["receipts"] == []
