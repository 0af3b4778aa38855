"""Operator control documents: ``reward_memory_operator_control_v0`` (an authorised edit
or retire decision, prepared without a provider write) and the edit's replacement
``reward_memory_candidate_v0``."""

from typing import Any

from loopx_site.core import clock
from reward_memory import authority
from reward_memory import contracts as c
from reward_memory.models import MemoryRecord

SCHEMA = "reward_memory_operator_control_v0"


def _control(
    *, control_id, action, record: MemoryRecord, control_ref, operator, reasoning
) -> dict[str, Any]:
    return {
        "ok": True,
        "schema_version": SCHEMA,
        "control_id": control_id,
        "recorded": False,
        "action": action,
        "record_ref": record.record_ref,
        "corpus_id": record.corpus.corpus_id,
        "control_ref": control_ref,
        "operator": operator,
        "reasoning_summary": reasoning,
        "provider_write_performed": False,
        "external_writes_performed": False,
        "grants_new_action_authority": False,
    }


# the action's prepared status, and who performs its next step
NEXT_STEPS = {
    "retire": ("retire_prepared", "retire_record", "retirement_authority"),
    "edit": ("edit_prepared", "candidate_review", "corpus_reviewer"),
}


def prepared(*, candidate: dict[str, Any] | None = None, **base: Any) -> dict[str, Any]:
    """A prepared decision: a retire (performed later with ``retire-record``) or an edit
    (its replacement ``candidate`` goes through review)."""
    status, action, performed_by = NEXT_STEPS[base["action"]]
    return {
        **_control(**base),
        "status": status,
        "decision": {"decision": base["action"], "record_ref": base["record"].record_ref},
        "replacement_candidate": candidate,
        "next_step": {"action": action, "performed_by": performed_by},
    }


def replacement_candidate(
    record: MemoryRecord, *, edited: str | None, reasoning: str, facts, control_ref: str
) -> dict[str, Any]:
    """The edit's ``reward_memory_candidate_v0``: the record's scope, confidence and
    authority with the edited summary; its lineage names the record's candidate, its
    source the live control checkpoint (a server record, not a string)."""
    content = record.content or {}
    candidate = {
        "schema_version": c.CANDIDATE_SCHEMA,
        "target_class": record.memory_class,
        "content_summary": edited,
        "reasoning_summary": reasoning,
        "source": {
            "kind": "operator_correction",
            "actor": facts.actor,
            "actor_role": facts.role,
            "evidence_ref": control_ref,
            "observed_at": clock.iso(clock.now()),
        },
        "scope": dict(content.get("scope") or {}),
        "confidence": dict(content.get("confidence") or {}),
        "requested_action_scopes": sorted(
            authority.normalise_scopes((content.get("authority") or {}).get("action_scopes"))
        ),
        "conflicts": [],
        "lineage": {"prior_candidate_ref": record.candidate_ref},
    }
    checkpoint_ref = (content.get("authority") or {}).get("checkpoint_ref")
    if record.memory_class == c.HARD_POLICY and checkpoint_ref:
        candidate["authority_checkpoint"] = {"checkpoint_ref": checkpoint_ref}
    for key in ("working_context_kind",):
        if content.get(key):
            candidate[key] = content[key]
    return candidate
