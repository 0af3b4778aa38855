"""Post-settlement reflection ingest (the Turn settlement seam).

``turn_reward_memory_reflection_v0`` names the exact configured surface, distinct
source types (``research|simulation|real|engineering``), opaque evidence refs (a plain
turn summary is not evidence) and the compact event to ingest.

The Turn composition (``turn_recall.settlement.settle_turn``) calls, in this order:

1. ``prepare_reflection`` — every check (shape, Agent, configured surface) **before** the
   primary writeback; a bad reflection raises and nothing at all is written;
2. the primary settlement (``hooks``);
3. ``settle_reflection`` — stores the candidate ``awaiting_evidence_validation`` (zero
   provider calls), asks the composition's ``validate`` callback for a **server-built**
   ``reward_memory_reflection_validation_v0`` (the Todo's declared validator, run by the
   server; see ``validation_from_run``) and, only when the Turn settled, that validation
   passed for exactly this reflection digest and these evidence refs, and the Agent's
   experiment has ``automatic_ingest`` on, ingests the event through the experiment
   route (exact readback) → ``finalized``; a fail-open ingest leaves it ``ingest_pending``.

A validation document in a host's request is never read (the composition reports it as
``caller_validation_ignored``). Without a declared validator nothing runs and the
candidate stays ``awaiting_evidence_validation``. An operator may record a validation by
hand (``record_validation``: admin action or ``reward_memory reflection-validate
--actor``), attributed to that operator account.
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loopx_site.core import clock
from loopx_site.core.canonical import digest_ref
from loopx_site.core.rows import get_or_create_once
from loopx_site.core.selectors import get_agent
from reward_memory import contracts as c
from reward_memory import principals
from reward_memory.documents import ingest as ingest_documents
from reward_memory.documents import reflection as reflection_documents
from reward_memory.domain import guards
from reward_memory.domain import validation as v
from reward_memory.errors import AREA, RewardMemoryError, invalid
from reward_memory.models import ReflectionCandidate
from reward_memory.principals import Principal
from reward_memory.services import ingest, routes

logger = logging.getLogger("loopx.reward_memory")


def parse_reflection(document: Any) -> dict[str, Any]:
    v.schema(document, c.REFLECTION_SCHEMA, "reflection.schema_version")
    allowed = {"schema_version", "surface_id", "source_types", "evidence_refs", "event"}
    for key in document:
        if key not in allowed:
            raise invalid(
                f"reflection.{key}", "field not modelled (a turn summary is not evidence)"
            )
    surface = v.surface(document.get("surface_id"), "reflection.surface_id")
    types = v.string_list(
        document.get("source_types"),
        "reflection.source_types",
        lambda x, f: v.choice(x, f, c.REFLECTION_SOURCE_TYPES),
        required=True,
        min_items=1,
        max_items=4,
    )
    if len(set(types)) != len(types):
        raise invalid("reflection.source_types", "source types must be distinct")
    refs = v.string_list(
        document.get("evidence_refs"), "reflection.evidence_refs", v.ref,
        required=True, min_items=1, max_items=16,
    )  # fmt: skip
    for i, ref in enumerate(refs):
        if not guards.is_public_safe_text(ref):
            raise invalid(f"reflection.evidence_refs.{i}", "evidence refs are opaque, public-safe")
    event = v.obj(document.get("event"), "reflection.event")
    return c.reflection(surface_id=surface, source_types=types, evidence_refs=refs, event=event)


@dataclass(frozen=True)
class PreparedReflection:
    """A reflection that passed every check; nothing has been written for it yet."""

    agent: Any
    turn_instance_id: str
    parsed: dict[str, Any]
    digest: str
    route: Any
    surface: Any

    def validator_view(self) -> dict[str, Any]:
        """What a completion validator is shown (no event content)."""
        return {
            "reflection_digest": self.digest,
            "surface_id": self.parsed["surface_id"],
            "source_types": list(self.parsed["source_types"]),
            "evidence_refs": list(self.parsed["evidence_refs"]),
        }


@dataclass(frozen=True)
class ReflectionOutcome:
    """A reflection candidate's state after a settlement or an operator's validation
    (``documents.reflection.outcome`` renders it as
    ``turn_reward_memory_reflection_result_v0``). ``row`` is ``None`` for a settlement
    preview (nothing stored); ``receipt`` is the ingest receipt it holds;
    ``validator_run_count`` and ``caller_validation_ignored`` are a settlement's;
    ``would_record`` is the validation an operator's preview would store."""

    digest: str
    route: routes.ExperimentRoute
    row: ReflectionCandidate | None = None
    receipt: dict[str, Any] | None = None
    provider_calls: int = 0
    validation_matched: bool = False
    validator_run_count: int | None = None
    caller_validation_ignored: bool | None = None
    would_record: dict[str, Any] | None = None


def prepare_reflection(
    *, goal_id: str, agent_id: str, turn_instance_id: str, reflection: Any
) -> PreparedReflection:
    """Validate a reflection completely, writing nothing (``invalid_argument`` /
    ``unsupported_schema`` naming the field)."""
    agent = get_agent(goal_id, agent_id, area=AREA)
    parsed = parse_reflection(reflection)
    v.identifier(turn_instance_id, "turn_instance_id")
    route = routes.experiment_route(goal_id, agent_id)
    surface = route.surface(parsed["surface_id"])
    if route.available and surface is None:
        raise invalid("reflection.surface_id", "the surface is not configured for this Agent")
    if surface is not None:
        # The event is checked now by the ingest pipeline's own plan (no write, no provider
        # call), so a malformed event can never fail the reflection after the settlement.
        try:
            ingest.ingest_event(
                event={**parsed["event"], "corpus_id": surface.ingest_corpus_id},
                goal_id=goal_id,
                agent_id=agent_id,
                execute=False,
            )
        except RewardMemoryError as exc:
            exc.field = f"reflection.event.{exc.field}" if exc.field else "reflection.event"
            raise
    return PreparedReflection(
        agent=agent,
        turn_instance_id=turn_instance_id,
        parsed=parsed,
        digest=digest_ref(parsed),
        route=route,
        surface=surface,
    )


def validation_from_run(prepared: PreparedReflection, run: dict[str, Any] | None):
    """The server's ``reward_memory_reflection_validation_v0`` from one validator run
    (``hooks.services.validators.ValidatorRun.public()``); ``None`` when the Todo declared
    no validator (nothing ran, nothing to record). It is the validation
    ``settle_reflection`` stores: rendered once, here."""
    if run is None or not run.get("declared"):
        return None
    return reflection_documents.validator_validation(
        reflection_digest=prepared.digest, evidence_refs=prepared.parsed["evidence_refs"], run=run
    )


def settle_reflection(
    *,
    prepared: PreparedReflection,
    settled: bool,
    execute: bool = True,
    validate: Callable[[], dict[str, Any] | None] | None = None,
    caller_validation_ignored: bool = False,
) -> ReflectionOutcome:
    """Store and (when validated by the server) finalise a prepared reflection.

    ``validate`` is called at most once, only under ``execute`` and only while the
    candidate has no passing validation and is not finalised; it returns the server-built
    validation document (``validation_from_run``) or ``None``.
    """
    digest, route, surface = prepared.digest, prepared.route, prepared.surface
    if not execute:  # a preview stores nothing and runs nothing
        return ReflectionOutcome(digest, route, caller_validation_ignored=caller_validation_ignored)
    row = _claim(prepared.agent, prepared.turn_instance_id, prepared.parsed, digest, settled)
    runs = 0
    if (
        row.status != c.REFLECTION_FINALIZED
        and not _validation_matches(row.validation, digest, row.evidence_refs)
        and validate is not None
    ):
        document = validate()
        runs = 1 if document is not None else 0
        if document is not None:
            ReflectionCandidate.objects.filter(pk=row.pk).exclude(
                status=c.REFLECTION_FINALIZED
            ).update(validation=document, updated_at=clock.now())
            row.refresh_from_db()
    receipt, provider_calls = _finalize(row, route, surface)
    return _outcome(
        row,
        route,
        receipt,
        provider_calls,
        validator_run_count=runs,
        caller_validation_ignored=caller_validation_ignored,
    )


def _finalize(row: ReflectionCandidate, route, surface):
    """Ingest once the Turn settled and a server validation passed (see module doc)."""
    receipt = row.ingest_receipt
    if (
        row.status == c.REFLECTION_FINALIZED
        or not row.turn_settled
        or not _validation_matches(row.validation, row.reflection_digest, row.evidence_refs)
        or surface is None
        or not route.automation["automatic_ingest"]
    ):
        return receipt, 0
    event = {**row.reflection["event"], "corpus_id": surface.ingest_corpus_id}
    try:
        ingested = ingest.ingest_event(
            event=event, goal_id=row.goal.goal_id, agent_id=row.agent.agent_id, execute=True
        )
    except RewardMemoryError as exc:  # after the settlement: fail open, never a 4xx
        logger.warning("reflection ingest refused: %s", exc.code)
        return {"status": "ingest_refused", "error_code": exc.code}, 0
    status = (
        c.REFLECTION_FINALIZED
        if ingested.status == c.INGEST_ACTIVATED and ingested.readback
        else "ingest_pending"
    )
    receipt = ingest_documents.ingest(ingested)  # stored on the candidate: rendered once
    ReflectionCandidate.objects.filter(pk=row.pk).exclude(status=c.REFLECTION_FINALIZED).update(
        status=status, ingest_receipt=receipt, updated_at=clock.now()
    )
    row.refresh_from_db()
    return receipt, ingested.provider_call_count


def _outcome(row, route, receipt, provider_calls, **extra) -> ReflectionOutcome:
    validation = row.validation if isinstance(row.validation, dict) else None
    matched = _validation_matches(validation, row.reflection_digest, row.evidence_refs)
    return ReflectionOutcome(
        row.reflection_digest,
        route,
        row,
        receipt,
        provider_calls,
        validation_matched=matched,
        **extra,
    )


def record_validation(
    *,
    goal_id: str,
    agent_id: str,
    reflection_digest: str,
    status: str,
    principal: Principal,
    evidence_ref: str | None = None,
    execute: bool = False,
) -> ReflectionOutcome:
    """An operator records a reflection's validation by hand (``passed`` | ``failed``),
    attributed to their account; a pass on a settled Turn finalises like a validator's.

    ``principal`` must be an operator (the admin's signed-in user, or the shell's
    ``--actor`` account); ``evidence_ref`` is an optional opaque ref of what they checked.
    """
    if not principal.is_operator:
        raise RewardMemoryError(
            "operator_required", "Only an operator account records a validation by hand"
        )
    principals.require_permission(principal, "record_validation")
    v.choice(status, "status", ("passed", "failed"))
    v.digest(reflection_digest, "reflection_digest")
    if evidence_ref is not None:
        v.ref(evidence_ref, "evidence_ref")
        if not guards.is_public_safe_text(evidence_ref):
            raise invalid("evidence_ref", "evidence refs are opaque, public-safe")
    agent = get_agent(goal_id, agent_id, area=AREA)
    row = ReflectionCandidate.objects.filter(agent=agent, reflection_digest=reflection_digest)
    row = row.select_related("goal", "agent").first()
    if row is None:
        raise RewardMemoryError(
            "reflection_not_found",
            "No reflection candidate has this digest",
            field="reflection_digest",
        )
    # the validation to store: rendered once, here (a preview shows it, stores nothing)
    document = reflection_documents.operator_validation(
        status=status,
        reflection_digest=row.reflection_digest,
        evidence_refs=row.evidence_refs,
        actor=principal.actor_ref,
        evidence_ref=evidence_ref,
    )
    route = routes.experiment_route(goal_id, agent_id)
    surface = route.surface(row.surface)
    if not execute:
        return _outcome(row, route, row.ingest_receipt, 0, would_record=document)
    if row.status == c.REFLECTION_FINALIZED:
        raise RewardMemoryError(
            "operation_conflict",
            "The reflection is already finalised; its validation is not re-recorded",
            field="reflection_digest",
        )
    ReflectionCandidate.objects.filter(pk=row.pk).exclude(status=c.REFLECTION_FINALIZED).update(
        validation=document, updated_at=clock.now()
    )
    row.refresh_from_db()
    receipt, calls = _finalize(row, route, surface)
    return _outcome(row, route, receipt, calls)


def _claim(agent, turn_instance_id, parsed, digest, settled) -> ReflectionCandidate:
    now = clock.now()
    row, _ = get_or_create_once(
        ReflectionCandidate.objects,
        agent=agent,
        reflection_digest=digest,
        defaults={
            "goal": agent.goal,
            "turn_instance_id": turn_instance_id,
            "surface": parsed["surface_id"],
            "evidence_refs": parsed["evidence_refs"],
            "reflection": parsed,
            "status": c.REFLECTION_AWAITING,
            "turn_settled": settled,
            "created_at": now,
            "updated_at": now,
        },
    )
    if settled and not row.turn_settled:
        ReflectionCandidate.objects.filter(pk=row.pk).update(turn_settled=True, updated_at=now)
        row.refresh_from_db()
    return row


def _validation_matches(validation: Any, digest: str, evidence_refs: list[str]) -> bool:
    """Only a stored, server-built ``reward_memory_reflection_validation_v0`` that passed
    and names exactly this reflection digest and these evidence refs counts."""
    if not isinstance(validation, dict):
        return False
    refs = validation.get("evidence_refs")
    return (
        validation.get("schema_version") == c.REFLECTION_VALIDATION_SCHEMA
        and validation.get("status") == "passed"
        and isinstance(validation.get("validated_by"), dict)
        and validation.get("reflection_digest") == digest
        and isinstance(refs, list)
        and len(refs) == len(evidence_refs)
        and sorted(r for r in refs if isinstance(r, str)) == sorted(evidence_refs)
    )
