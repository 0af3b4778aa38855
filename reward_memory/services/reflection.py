"""Post-settlement reflection ingest (the Turn settlement seam).

``turn_reward_memory_reflection_v0`` names the exact configured surface, distinct
source types (``research|simulation|real|engineering``), opaque evidence refs (a plain
turn summary is not evidence) and the compact event to ingest. ``settle_reflection``:

1. validates it and stores it ``awaiting_evidence_validation`` — zero provider calls;
2. only when the Turn's primary writeback and quota spend settled **and** a
   ``reward_memory_reflection_validation_v0`` with the same reflection digest and the
   same evidence refs is supplied (a plain validation exit 0 is not enough), and the
   Agent's experiment has ``automatic_ingest`` on, the event is ingested through the
   experiment route (exact readback) → ``finalized``; a fail-open ingest status leaves
   it ``ingest_pending`` (retried the same way next time).
"""

from typing import Any

from django.db import IntegrityError, transaction

from loopx_site.core import clock
from loopx_site.core.canonical import digest_ref
from loopx_site.core.selectors import get_agent
from reward_memory import contracts as c
from reward_memory import guards, selectors
from reward_memory import validation as v
from reward_memory.errors import AREA, RewardMemoryError, invalid
from reward_memory.models import ReflectionCandidate

RESULT_SCHEMA = "turn_reward_memory_reflection_result_v0"


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
    return {
        "schema_version": c.REFLECTION_SCHEMA,
        "surface_id": surface,
        "source_types": sorted(types),
        "evidence_refs": sorted(refs),
        "event": event,
    }


def settle_reflection(
    *,
    goal_id: str,
    agent_id: str,
    turn_instance_id: str,
    reflection: Any,
    validation: Any = None,
    settled: bool,
    execute: bool = True,
) -> dict[str, Any]:
    agent = get_agent(goal_id, agent_id, area=AREA)
    parsed = parse_reflection(reflection)
    digest = digest_ref(parsed)
    route = selectors.experiment_route(goal_id, agent_id)
    surface = route.surface(parsed["surface_id"])
    if route.available and surface is None:
        raise invalid("reflection.surface_id", "the surface is not configured for this Agent")
    if not execute:  # a preview stores nothing
        return {
            "ok": True,
            "schema_version": RESULT_SCHEMA,
            "status": "preview",
            "reflection_digest": digest,
            "experiment_status": route.status,
            "provider_call_count": 0,
        }
    row = _claim(agent, turn_instance_id, parsed, digest)
    matched = _validation_matches(validation, digest, parsed["evidence_refs"])
    receipt = row.ingest_receipt
    provider_calls = 0
    if (
        row.status != c.REFLECTION_FINALIZED
        and settled
        and matched
        and surface is not None
        and route.automation["automatic_ingest"]
    ):
        from reward_memory.services.ingest import ingest_event

        event = {**parsed["event"], "corpus_id": surface.ingest_corpus_id}
        receipt = ingest_event(event=event, goal_id=goal_id, agent_id=agent_id, execute=True)
        provider_calls = receipt.get("provider_call_count") or 0
        status = (
            c.REFLECTION_FINALIZED
            if receipt["status"] == c.INGEST_ACTIVATED and receipt["readback"]
            else "ingest_pending"
        )
        ReflectionCandidate.objects.filter(pk=row.pk).exclude(status=c.REFLECTION_FINALIZED).update(
            status=status, ingest_receipt=receipt, updated_at=clock.now()
        )
        row.refresh_from_db()
    return {
        "ok": True,
        "schema_version": RESULT_SCHEMA,
        "status": row.status,
        "reflection_digest": digest,
        "turn_settled": settled,
        "validation_matched": matched,
        "experiment_status": route.status,
        "automatic_ingest": route.automation["automatic_ingest"],
        "ingest_status": (receipt or {}).get("status"),
        "record_ref": (receipt or {}).get("record_ref"),
        "provider_call_count": provider_calls,
        "fail_open": True,
        "user_gate": False,
    }


def _claim(agent, turn_instance_id, parsed, digest) -> ReflectionCandidate:
    now = clock.now()
    try:
        with transaction.atomic():
            row, _ = ReflectionCandidate.objects.get_or_create(
                agent=agent,
                reflection_digest=digest,
                defaults={
                    "goal": agent.goal,
                    "turn_instance_id": v.identifier(turn_instance_id, "turn_instance_id"),
                    "surface": parsed["surface_id"],
                    "evidence_refs": parsed["evidence_refs"],
                    "reflection": parsed,
                    "status": c.REFLECTION_AWAITING,
                    "created_at": now,
                    "updated_at": now,
                },
            )
    except IntegrityError:
        row = ReflectionCandidate.objects.get(agent=agent, reflection_digest=digest)
    return row


def _validation_matches(validation: Any, digest: str, evidence_refs: list[str]) -> bool:
    """Only a ``reward_memory_reflection_validation_v0`` that passed and names exactly
    this reflection digest and evidence refs counts."""
    if validation is None:
        return False
    if not isinstance(validation, dict):
        raise invalid("validation", "the validation must be a JSON object")
    if validation.get("schema_version") != c.REFLECTION_VALIDATION_SCHEMA:
        raise RewardMemoryError(
            "unsupported_schema",
            f"schema_version must be {c.REFLECTION_VALIDATION_SCHEMA}",
            field="validation.schema_version",
        )
    refs = validation.get("evidence_refs")
    return (
        validation.get("status") == "passed"
        and validation.get("reflection_digest") == digest
        and isinstance(refs, list)
        and sorted(r for r in refs if isinstance(r, str)) == evidence_refs
        and len(refs) == len(evidence_refs)
    )
