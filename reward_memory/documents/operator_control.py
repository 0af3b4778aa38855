"""Operator control documents: ``reward_memory_operator_control_v0`` (an authorised edit
or retire decision, prepared without a provider write)."""

import hashlib
from typing import Any

SCHEMA = "reward_memory_operator_control_v0"


def _control(control) -> dict[str, Any]:
    """The decision's own fields (``control``: the service's ``PreparedControl``)."""
    return {
        "ok": True,
        "schema_version": SCHEMA,
        "control_id": control.control_id,
        "recorded": False,
        "action": control.action,
        "record_ref": control.record.record_ref,
        "corpus_id": control.record.corpus.corpus_id,
        "control_ref": control.control_ref,
        "operator": control.operator,
        "reasoning_summary": control.reasoning,
        "provider_write_performed": False,
        "external_writes_performed": False,
        "grants_new_action_authority": False,
    }


# LoopX's status of a prepared control (both actions)
STATUS = "control_ready"
# the action's next step: who performs it, and LoopX's receipt word for it
NEXT_STEPS = {
    "retire": ("retire_record", "retirement_authority"),
    "edit": ("candidate_review", "corpus_reviewer"),
}
LOOPX_NEXT_STEPS = {
    "retire": "owner_write_retirement_then_exact_readback",
    "edit": "review_replacement_then_owner_write_and_exact_readback",
}


def _ref_digest(ref: str) -> str:
    """LoopX's 16-hex digest of a candidate ref."""
    return hashlib.sha256(ref.encode("utf-8")).hexdigest()[:16]


def loopx_receipt(control, *, authority_ref: str, result_candidate_ref: str) -> dict[str, Any]:
    """LoopX's ``receipt`` of the control: who acted under which server-verified
    checkpoint (``authority_source_ref`` is the checkpoint's id), the prior and resulting
    candidate refs as digests, the resulting state; no provider write, no readback yet."""
    action = control.action
    return {
        "schema_version": SCHEMA,
        "control_ref": control.control_ref,
        "action": action,
        "effective_action": action,
        "operator_ref": control.operator,
        "authority_ref": authority_ref,
        "authority_source_ref": control.control_ref,
        "authority_verified": True,
        "corpus_id": control.record.corpus.corpus_id,
        "prior_candidate_ref_digest": _ref_digest(control.record.candidate_ref),
        "result_candidate_ref_digest": _ref_digest(result_candidate_ref),
        "result_state": "candidate" if action == "edit" else "retired",
        "reasoning_summary": control.reasoning,
        "provider_write_performed": False,
        "readback_verified": False,
        "next_step": LOOPX_NEXT_STEPS[action],
        "grants_new_action_authority": False,
        "raw_content_captured": False,
        "external_writes_performed": False,
    }


def prepared(control) -> dict[str, Any]:
    """A prepared decision (LoopX's ``control_ready`` with its ``receipt``) of a
    ``services.operator_control.PreparedControl``: a retire (performed later with
    ``retire-record``) or an edit (its replacement ``candidate`` goes through review)."""
    action, performed_by = NEXT_STEPS[control.action]
    return {
        **_control(control),
        "status": STATUS,
        "decision": {"decision": control.action, "record_ref": control.record.record_ref},
        "receipt": loopx_receipt(
            control,
            authority_ref=control.authority_ref,
            result_candidate_ref=control.result_candidate_ref,
        ),
        "replacement_candidate": control.candidate,
        "next_step": {"action": action, "performed_by": performed_by},
    }


def decision(result) -> dict[str, Any]:
    """The answer of ``services.operator_control``'s ``ControlDecision``: the stored
    document once stored, else the prepared decision."""
    if result.row is not None:
        return result.row.document
    return prepared(result.prepared)
