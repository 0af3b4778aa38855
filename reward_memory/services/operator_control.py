"""Stage 5 operator control: an authorised edit or retire decision for one active
record, prepared without any provider write.

The signed-in operator must hold ``reward_memory.change_memoryrecord`` and be the corpus
owner (edit) or retirement authority / owner (retire) itself. The authority is an
operator-granted ``AuthorityCheckpoint`` named by ``control_ref``:
an edit checkpoint must bind the corpus ``owner``, a retire checkpoint the corpus
``maintenance.retirement_authority``; both must be live, bind the corpus's project and
hold the exact action scope ``reward_memory.<action>.<corpus_id>``. An edit returns a
replacement candidate whose lineage names the old record's candidate (it goes through
review like any candidate). A retire, with ``execute``, is one operation on every
adapter (CLI, API, admin): the decision is stored and the record retired in the same
transaction (``records.retire_record``, which also queues the provider delete), so the
record is never left live behind a stored retire control. ``execute`` stores the
decision as an ``OperatorControl`` row (idempotent on ``control_id``: a repeat answers
the stored document), the record a dogfood batch's operator control must reference.
"""

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from loopx_site.core import clock
from loopx_site.core.canonical import prefixed_id, text_digest_ref
from loopx_site.core.rows import get_or_create_once
from reward_memory import contracts as c
from reward_memory import selectors
from reward_memory.documents import operator_control as control_documents
from reward_memory.domain import candidates, guards
from reward_memory.domain import validation as v
from reward_memory.errors import RewardMemoryError, invalid
from reward_memory.models import MemoryRecord, OperatorControl
from reward_memory.principals import Principal, require_operator
from reward_memory.services import records

ACTIONS = ("edit", "retire")
CHECKPOINT_ROLE_FIELD = {"edit": "owner", "retire": "retirement_authority"}


@dataclass(frozen=True)
class PreparedControl:
    """The decision being prepared: what ``documents.operator_control.prepared``
    renders (an edit's replacement ``candidate`` goes through review)."""

    control_id: str
    action: str
    record: MemoryRecord
    control_ref: str
    operator: str  # the operator's actor ref
    reasoning: str  # the public-safe reasoning summary
    authority_ref: str  # the checkpoint's bound actor
    result_candidate_ref: str
    candidate: dict[str, Any] | None = None


@dataclass(frozen=True)
class ControlDecision:
    """What ``operator_control`` answers (``documents.operator_control.decision``): the
    prepared decision of a preview, or the stored ``OperatorControl`` row whose document
    every repeat answers."""

    prepared: PreparedControl | None
    row: OperatorControl | None = None


def usable_checkpoints(record: MemoryRecord, action: str) -> list[str]:
    """The live checkpoint ids an operator control ``action`` on ``record`` would accept
    (reads only: what the admin offers when the checkpoint id is missing)."""
    from reward_memory.models import AuthorityCheckpoint

    corpus = record.corpus
    actor = getattr(corpus, CHECKPOINT_ROLE_FIELD.get(action, "owner"))
    scope = control_scope(action, corpus.corpus_id)
    rows = AuthorityCheckpoint.objects.filter(
        actor=actor, project=corpus.project, revoked_at__isnull=True
    ).order_by("checkpoint_id")
    usable = []
    for row in rows:
        facts = selectors.checkpoint_facts(row.checkpoint_id)
        if facts is not None and facts.live and scope in facts.action_scopes:
            usable.append(row.checkpoint_id)
    return usable


def control_scope(action: str, corpus_id: str) -> str:
    return f"reward_memory.{action}.{corpus_id}".lower()


def _refuse(reason: str, message: str) -> RewardMemoryError:
    return RewardMemoryError(
        "operator_checkpoint_refused", message, field="control_ref", details={"reason": reason}
    )


def _safe_text(value: Any, field: str) -> str:
    text = v.text(value, field, max_length=500)
    if guards.string_reasons(text, field):
        raise invalid(field, f"{field} must be public-safe (no URLs, paths or credentials)")
    return text


def operator_control(
    *,
    record_ref: str,
    action: str,
    control_ref: str,
    reasoning_summary: str,
    principal: Principal,
    edited_content_summary: str | None = None,
    execute: bool = False,
) -> ControlDecision:
    """The ``reward_memory_operator_control_v0`` decision (never a provider write;
    ``execute`` stores it as an ``OperatorControl`` row)."""
    require_operator(principal, "operator_control")
    v.choice(action, "action", ACTIONS)
    v.ref(control_ref, "control_ref")
    reasoning = _safe_text(reasoning_summary, "reasoning_summary")
    record = selectors.get_record(record_ref)
    corpus = record.corpus
    # the signed-in operator must hold the corpus role the checkpoint binds
    records.authorize_record_operation(principal, corpus, f"operator_{action}")
    if execute and action == "retire":
        done = _performed_retire(record, control_ref, principal)
        if done is not None:
            return done
    if record.lifecycle_state != c.ACTIVE or not corpus.active:
        raise RewardMemoryError(
            "invalid_transition",
            "Operator control needs an active record of an active corpus.",
            field="record_ref",
        )
    facts = _checkpoint_for(action, corpus, control_ref)
    edited = (
        _safe_text(edited_content_summary, "edited_content_summary")
        if action == "edit" and edited_content_summary is not None
        else None
    )
    control_id = prefixed_id(
        "rmoc_",
        {
            "record_ref": record.record_ref,
            "action": action,
            "control_ref": control_ref,
            "operator": principal.actor_ref,
            "reasoning_digest": text_digest_ref(reasoning),
            "edited_digest": text_digest_ref(edited) if edited else None,
        },
    )
    if action == "retire":
        control = PreparedControl(
            control_id, action, record, control_ref, principal.actor_ref, reasoning,
            authority_ref=facts.actor, result_candidate_ref=record.candidate_ref,
        )  # fmt: skip
        if not execute:
            return ControlDecision(control)
        with transaction.atomic():
            stored = _store(control)
            records.retire_record(
                record_ref=record.record_ref, principal=principal, reason_summary=reasoning
            )
        return ControlDecision(control, stored)
    if edited_content_summary is None:
        raise invalid("edited_content_summary", "an edit needs the edited content summary")
    candidate = candidates.replacement(
        record, edited=edited, reasoning=reasoning, facts=facts, control_ref=control_ref
    )
    control = PreparedControl(
        control_id, action, record, control_ref, principal.actor_ref, reasoning,
        authority_ref=facts.actor, result_candidate_ref=candidates.candidate_ref(candidate),
        candidate=candidate,
    )  # fmt: skip
    return ControlDecision(control, _store(control) if execute else None)


def _checkpoint_for(action: str, corpus, control_ref: str):
    """The live operator-granted checkpoint ``control_ref``, if it binds the corpus's
    role for ``action`` in the corpus's project and holds the control's action scope."""
    facts = selectors.checkpoint_facts(control_ref)
    if facts is None or not facts.live:
        raise _refuse("checkpoint_unverified", "No live operator-granted checkpoint has that id.")
    expected_actor = getattr(corpus, CHECKPOINT_ROLE_FIELD[action])
    if facts.actor != expected_actor:
        raise _refuse(
            "checkpoint_actor_mismatch",
            f"A {action} checkpoint must bind the corpus's {CHECKPOINT_ROLE_FIELD[action]}.",
        )
    if facts.project != corpus.project:
        raise _refuse("checkpoint_project_mismatch", "The checkpoint binds another project.")
    if control_scope(action, corpus.corpus_id) not in facts.action_scopes:
        raise _refuse(
            "action_scope_not_in_checkpoint",
            f"The checkpoint must hold {control_scope(action, corpus.corpus_id)}.",
        )
    return facts


def _performed_retire(record, control_ref: str, principal: Principal) -> ControlDecision | None:
    """This operator's stored retire control on ``record`` when it was already performed
    (a repeat of ``--execute``), else ``None``."""
    if record.lifecycle_state != c.RETIRED:
        return None
    row = OperatorControl.objects.filter(
        record=record, action="retire", control_ref=control_ref, operator=principal.actor_ref
    ).first()
    return None if row is None else ControlDecision(None, row)


def _store(control: PreparedControl) -> OperatorControl:
    """Store the decision (idempotent on ``control_id``): its document is rendered once,
    here, and is the answer of every repeat."""
    document = control_documents.prepared(control)
    record = control.record
    stored = {**document, "recorded": True}
    row, _ = get_or_create_once(  # a concurrent identical control's row is re-read
        OperatorControl.objects,
        control_id=document["control_id"],
        defaults={
            "record": record,
            "corpus": record.corpus,
            "action": document["action"],
            "control_ref": document["control_ref"],
            "operator": document["operator"],
            "document": stored,
            "created_at": clock.now(),
        },
    )
    return row
