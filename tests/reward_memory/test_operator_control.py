"""Issue 13 operator control: edit needs an owner checkpoint, retire a retirement
checkpoint, both bound to the exact corpus, project and action; neither writes."""

import json

import pytest
from django.urls import reverse

from reward_memory import services
from reward_memory.documents import operator_control as control_documents
from reward_memory.documents import review as review_documents
from reward_memory.errors import RewardMemoryError
from reward_memory.models import MemoryRecord
from tests.helpers import run_cli
from tests.reward_memory import factories as f


def _grant(checkpoint_id, actor, scopes, project=f.PROJECT):
    services.grant_checkpoint(
        checkpoint_id=checkpoint_id,
        project=project,
        actor=actor,
        role="corpus_owner",
        action_scopes=scopes,
        operator=f.op(f.OWNER),
        execute=True,
    )


@pytest.fixture
def record(db, double_corpus, double):
    _grant("ckpt-edit", f.OWNER, ["reward_memory.edit.prefs"])
    _grant("ckpt-retire", f.RETIRER, ["reward_memory.retire.prefs"])
    _grant("ckpt-other-project", f.OWNER, ["reward_memory.edit.prefs"], project="proj-b")
    _grant("ckpt-wrong-action", f.OWNER, ["reward_memory.retire.prefs"])
    receipt = f.ingested(event=f.scoped_event(), goal_id="demo", agent_id="author", execute=True)
    double.reset_calls()
    return MemoryRecord.objects.get(record_ref=receipt["record_ref"])


def _control(record, action, control_ref, **kw):
    decision = services.operator_control(
        record_ref=record.record_ref,
        action=action,
        control_ref=control_ref,
        reasoning_summary="The owner narrowed the preference after review.",
        principal=f.op(f.OWNER),
        **kw,
    )
    return control_documents.decision(decision)


def test_edit_with_the_owner_checkpoint_prepares_a_replacement_without_writing(record, double):
    doc = _control(record, "edit", "ckpt-edit", edited_content_summary="Lead with the effect.")
    assert (doc["status"], doc["provider_write_performed"]) == ("control_ready", False)
    candidate = doc["replacement_candidate"]
    assert candidate["lineage"] == {"prior_candidate_ref": record.candidate_ref}
    assert candidate["content_summary"] == "Lead with the effect."
    review = review_documents.decision(
        services.review_candidate(candidate=candidate, decision="accept", corpus_id="prefs")
    )
    assert review["effective_decision"] == "accept"
    assert double.call_count == 0
    assert MemoryRecord.objects.get(pk=record.pk).lifecycle_state == "active"


def test_retire_needs_the_retirement_authority_checkpoint(record):
    doc = _control(record, "retire", "ckpt-retire")
    assert doc["status"] == "control_ready"
    assert doc["decision"] == {"decision": "retire", "record_ref": record.record_ref}


def test_a_control_carries_loopx_receipt(record):
    # loopx/capabilities/reward_memory/dogfood.py (build_reward_memory_operator_control:
    # status control_ready, receipt with the authority, digests and next step)
    import hashlib

    from reward_memory.domain import candidates

    def digest(ref):
        return hashlib.sha256(ref.encode("utf-8")).hexdigest()[:16]

    retire = _control(record, "retire", "ckpt-retire")["receipt"]
    assert retire["schema_version"] == "reward_memory_operator_control_v0"
    assert (retire["action"], retire["effective_action"], retire["result_state"]) == (
        "retire",
        "retire",
        "retired",
    )
    assert (retire["control_ref"], retire["authority_source_ref"]) == ("ckpt-retire",) * 2
    assert retire["operator_ref"] == f.OWNER
    assert retire["authority_verified"] is True
    assert retire["prior_candidate_ref_digest"] == digest(record.candidate_ref)
    assert retire["result_candidate_ref_digest"] == digest(record.candidate_ref)
    assert retire["next_step"] == "owner_write_retirement_then_exact_readback"
    assert (retire["provider_write_performed"], retire["readback_verified"]) == (False, False)
    doc = _control(record, "edit", "ckpt-edit", edited_content_summary="Lead with the effect.")
    edit = doc["receipt"]
    assert edit["result_state"] == "candidate"
    assert edit["result_candidate_ref_digest"] == digest(
        candidates.candidate_ref(doc["replacement_candidate"])
    )
    assert edit["next_step"] == "review_replacement_then_owner_write_and_exact_readback"


@pytest.mark.parametrize(
    ("action", "control_ref", "reason"),
    [
        ("edit", "ckpt-retire", "checkpoint_actor_mismatch"),
        ("retire", "ckpt-edit", "checkpoint_actor_mismatch"),
        ("edit", "ckpt-other-project", "checkpoint_project_mismatch"),
        ("edit", "ckpt-wrong-action", "action_scope_not_in_checkpoint"),
        ("edit", "ckpt-missing", "checkpoint_unverified"),
    ],
)
def test_a_checkpoint_that_does_not_authorise_the_control_is_refused(
    record, action, control_ref, reason
):
    with pytest.raises(RewardMemoryError) as exc:
        _control(record, action, control_ref, edited_content_summary="x y z")
    assert (exc.value.code, exc.value.details["reason"]) == ("operator_checkpoint_refused", reason)


def test_operator_control_command(record, tmp_path):
    path = tmp_path / "record.json"
    path.write_text(json.dumps({"record_ref": record.record_ref}))
    argv = [
        "reward_memory", "operator-control", "--input", str(path), "--action", "retire",
        "--reasoning-summary", "Superseded by the team's new template.", "--actor", f.OWNER,
    ]  # fmt: skip
    ok = run_cli(*argv, "--control-ref", "ckpt-retire")
    assert (ok.code, ok.json["status"]) == (0, "control_ready"), ok.stdout
    refused = run_cli(*argv, "--control-ref", "ckpt-edit")
    assert (refused.code, refused.json["code"]) == (2, "operator_checkpoint_refused")


def test_admin_operator_actions_call_the_service_and_show_refusals(client, admin_client, record):
    from django.contrib.auth import get_user_model

    url = reverse("admin:reward_memory_memoryrecord_changelist")
    control = {
        "action": "operator_edit",
        "_selected_action": [record.pk],
        "control_ref": "ckpt-edit",
        "reasoning_summary": "Tighter wording.",
        "edited_content_summary": "Lead with the user-visible effect first.",
    }
    # a superuser holds the permission but is not the corpus owner: the service refuses
    stranger = admin_client.post(url, control, follow=True)
    texts = [str(m) for m in stranger.context["messages"]]
    assert any("owner_not_authorized" in t and "user:owner" in t for t in texts), texts
    client.force_login(get_user_model().objects.get(username="owner"))
    admin_client = client  # the signed-in corpus owner (holding change_memoryrecord)
    ok = admin_client.post(
        url,
        {
            "action": "operator_edit",
            "_selected_action": [record.pk],
            "control_ref": "ckpt-edit",
            "reasoning_summary": "Tighter wording.",
            "edited_content_summary": "Lead with the user-visible effect first.",
        },
        follow=True,
    )
    texts = [str(m) for m in ok.context["messages"]]
    assert any("replacement candidate recorded" in t for t in texts), texts
    refused = admin_client.post(
        url,
        {
            "action": "operator_retire",
            "_selected_action": [record.pk],
            "control_ref": "ckpt-edit",
            "reasoning_summary": "Retire it.",
        },
        follow=True,
    )
    texts = [str(m) for m in refused.context["messages"]]
    assert any("operator_checkpoint_refused" in t for t in texts), texts
    assert MemoryRecord.objects.get(pk=record.pk).lifecycle_state == "active"


def test_an_executed_retire_control_retires_the_record_on_the_cli_as_in_the_admin(record, tmp_path):
    """Issue 33: ``operator-control --action retire --execute`` stored the control and left
    the record live while the admin action retired it at once; one operation now."""
    path = tmp_path / "record.json"
    path.write_text(json.dumps({"record_ref": record.record_ref}))
    argv = [
        "reward_memory", "operator-control", "--input", str(path), "--action", "retire",
        "--reasoning-summary", "Superseded by the team's new template.", "--actor", f.OWNER,
        "--control-ref", "ckpt-retire",
    ]  # fmt: skip
    preview = run_cli(*argv)
    assert preview.code == 0, preview.stdout
    assert MemoryRecord.objects.get(pk=record.pk).lifecycle_state == "active"
    done = run_cli(*argv, "--execute")
    assert (done.code, done.json["recorded"]) == (0, True), done.stdout
    assert MemoryRecord.objects.get(pk=record.pk).lifecycle_state == "retired"
    again = run_cli(*argv, "--execute")  # a repeat answers the stored decision
    assert (again.code, again.json["control_id"]) == (0, done.json["control_id"])
