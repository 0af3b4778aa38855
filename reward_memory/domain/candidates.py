"""``reward_memory_candidate_v0``: structural validation, identity, evaluation, and the two
pure field-mapping adapters (``issue_fix_reward_memory_candidate_adapter_v0`` and
``scoped_feedback_reward_memory_event_v0``).

Nothing here reads or writes the database; ``evaluate`` takes the corpus binding as a
value.
"""

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

from loopx_site.core import clock
from loopx_site.core.canonical import digest_ref, nfc, prefixed_id
from reward_memory import contracts as c
from reward_memory.domain import authority, guards
from reward_memory.domain import validation as v
from reward_memory.domain.guards import Reason
from reward_memory.errors import RewardMemoryError, invalid


@dataclass
class CandidateEvaluation:
    """A candidate and the deterministic guard outcome; always inspectable."""

    candidate: dict[str, Any] | None  # None when the public-safe shape scan failed
    candidate_ref: str
    candidate_digest: str
    reasons: list[Reason] = field(default_factory=list)
    observed_at: dt.datetime | None = None
    expires_at: dt.datetime | None = None

    @property
    def blocked(self) -> bool:
        return bool(self.reasons)

    @property
    def guard_status(self) -> str:
        return c.GUARD_BLOCKED if self.reasons else c.GUARD_PASSED

    def guard_payload(self) -> dict[str, Any]:
        return {"status": self.guard_status, "reasons": guards.payload(self.reasons)}


# -- identity -----------------------------------------------------------------------------
def identity_fields(candidate: dict[str, Any]) -> dict[str, Any]:
    """Exactly the fields that name a candidate: class, content, source actor and evidence,
    scope, requested scopes (as a set) and edit lineage. Reasoning, confidence, times and
    guard observations are judgement about the candidate, not its identity."""
    source = candidate.get("source") if isinstance(candidate.get("source"), dict) else {}
    requested = candidate.get("requested_action_scopes") or []
    if isinstance(requested, list) and all(isinstance(s, str) for s in requested):
        requested = sorted(set(requested))
    ident = c.instance(
        c.CANDIDATE_SCHEMA,
        target_class=candidate.get("target_class"),
        content_summary=candidate.get("content_summary"),
        source={k: source.get(k) for k in ("kind", "actor", "actor_role", "evidence_ref")},
        scope=candidate.get("scope"),
        requested_action_scopes=requested,
    )
    if candidate.get("working_context_kind") is not None:
        ident["working_context_kind"] = candidate["working_context_kind"]
    if candidate.get("lineage") is not None:
        ident["lineage"] = candidate["lineage"]
    return ident


def candidate_ref(candidate: dict[str, Any]) -> str:
    return prefixed_id("cand_", nfc(identity_fields(candidate)))


def candidate_digest(candidate: dict[str, Any]) -> str:
    return digest_ref(nfc(candidate))


def lineage_digest(candidate: dict[str, Any]) -> str:
    """The content identity a closed lineage is matched on: class, project, surface and
    the content summary with case and whitespace folded (a re-worded source or event id
    does not reopen a rejected meaning)."""
    scope = candidate.get("scope") if isinstance(candidate.get("scope"), dict) else {}
    summary = candidate.get("content_summary")
    folded = " ".join(summary.casefold().split()) if isinstance(summary, str) else None
    return digest_ref(
        {
            "target_class": candidate.get("target_class"),
            "project": scope.get("project"),
            "surface": scope.get("surface"),
            "content_summary": folded,
        }
    )


# -- structure ----------------------------------------------------------------------------
CANDIDATE_REF_RE = re.compile(r"^cand_[0-9a-f]{64}$")


def validate_structure(candidate: dict[str, Any]) -> tuple[dt.datetime, dt.datetime | None]:
    """Types, enums and patterns; returns (observed_at, expires_at)."""
    v.choice(candidate.get("target_class"), "target_class", c.MEMORY_CLASSES)
    if candidate.get("target_class") == c.WORKING_CONTEXT:
        v.choice(
            candidate.get("working_context_kind"), "working_context_kind", c.WORKING_CONTEXT_KINDS
        )
    elif candidate.get("working_context_kind") is not None:
        raise invalid("working_context_kind", "only working_context candidates carry a kind")
    v.text(candidate.get("content_summary"), "content_summary")
    v.text(candidate.get("reasoning_summary"), "reasoning_summary")
    source = v.obj(candidate.get("source"), "source")
    v.token(source.get("kind"), "source.kind")
    v.ref(source.get("actor"), "source.actor")
    v.token(source.get("actor_role"), "source.actor_role")
    v.ref(source.get("evidence_ref"), "source.evidence_ref")
    observed_at = v.timestamp(source.get("observed_at"), "source.observed_at")
    scope = v.obj(candidate.get("scope"), "scope")
    v.ref(scope.get("workspace"), "scope.workspace", required=False)
    v.project(scope.get("project"), "scope.project")
    v.surface(scope.get("surface"), "scope.surface")
    for key in ("repository_revision", "subject_ref", "session_revision"):
        v.ref(scope.get(key), f"scope.{key}", required=False)
    confidence = v.obj(candidate.get("confidence"), "confidence")
    v.choice(confidence.get("level"), "confidence.level", c.CONFIDENCE_LEVELS)
    v.text(confidence.get("basis"), "confidence.basis", max_length=300)
    v.action_scopes(candidate.get("requested_action_scopes"), "requested_action_scopes")
    v.string_list(candidate.get("conflicts"), "conflicts", v.ref)
    freshness = v.obj(candidate.get("freshness"), "freshness", required=False) or {}
    v.ref(freshness.get("source_revision"), "freshness.source_revision", required=False)
    v.ref(freshness.get("current_revision"), "freshness.current_revision", required=False)
    proof = v.obj(candidate.get("artifact_proof"), "artifact_proof", required=False)
    if proof is not None:
        v.boolean(proof.get("required"), "artifact_proof.required", required=False)
        v.boolean(proof.get("verified"), "artifact_proof.verified")
        v.artifact_ref(proof.get("artifact_ref"), "artifact_proof.artifact_ref")
        v.digest(proof.get("artifact_digest"), "artifact_proof.artifact_digest", required=False)
    checkpoint = v.obj(
        candidate.get("authority_checkpoint"), "authority_checkpoint", required=False
    )
    if checkpoint is not None:
        # Only the id is used; the other fields are claims, accepted for LoopX documents
        # and ignored (the guard reads the operator-granted row).
        v.ref(checkpoint.get("checkpoint_ref"), "authority_checkpoint.checkpoint_ref")
        v.boolean(checkpoint.get("verified"), "authority_checkpoint.verified", required=False)
        v.ref(checkpoint.get("actor"), "authority_checkpoint.actor", required=False)
        v.token(checkpoint.get("role"), "authority_checkpoint.role", required=False)
        v.project(checkpoint.get("project"), "authority_checkpoint.project", required=False)
        v.action_scopes(checkpoint.get("action_scopes"), "authority_checkpoint.action_scopes")
    lineage = v.obj(candidate.get("lineage"), "lineage", required=False)
    if lineage is not None:
        v.pattern(
            lineage.get("prior_candidate_ref"),
            "lineage.prior_candidate_ref",
            CANDIDATE_REF_RE,
            what="a candidate ref (cand_<hex>)",
        )
    expires_at = v.timestamp(candidate.get("expires_at"), "expires_at", required=False)
    return observed_at, expires_at


def evaluate(
    document: Any,
    *,
    now: dt.datetime,
    corpus: guards.CorpusBinding | None = None,
    field_map: dict[str, str] | None = None,
    checkpoints: guards.CheckpointLookup | None = None,
    roles: guards.RoleBindings | None = None,
) -> CandidateEvaluation:
    """Validate and guard one candidate document.

    Shape failures (unmodelled/raw/authority fields, URLs, paths, credentials) are guard
    reasons and stop evaluation (the candidate stays inspectable by ref and reasons);
    structural errors raise ``invalid_argument``; rule failures are guard reasons.
    """
    v.schema(document, c.CANDIDATE_SCHEMA)
    document = utc_timestamps(nfc(document))
    ref = candidate_ref(document)
    digest = candidate_digest(document)
    shape = guards.scan(document, c.CANDIDATE_SHAPE)
    if shape:
        return CandidateEvaluation(None, ref, digest, _mapped(shape, field_map))
    try:
        observed_at, expires_at = validate_structure(document)
    except RewardMemoryError as exc:
        if field_map and exc.field:
            exc.field = _map_field(exc.field, field_map)
        raise
    reasons = guards.candidate_reasons(
        document,
        observed_at=observed_at,
        expires_at=expires_at,
        now=now,
        corpus=corpus,
        checkpoints=checkpoints,
        roles=roles,
    )
    return CandidateEvaluation(
        document, ref, digest, _mapped(reasons, field_map), observed_at, expires_at
    )


def _utc(value: Any) -> Any:
    """An offset timestamp (LoopX's ``…+00:00``) as our ``…Z`` text for the same instant;
    anything else unchanged (validation judges it)."""
    try:
        clock.parse_iso_z(value)
        return value
    except (TypeError, ValueError):
        pass
    try:
        return clock.iso(clock.parse_rfc3339(value))
    except (TypeError, ValueError):
        return value


def utc_timestamps(document: Any) -> Any:
    """The candidate with ``source.observed_at`` and ``expires_at`` in one UTC form, so the
    same instant written two ways is the same candidate (ref, digest, replay)."""
    if not isinstance(document, dict):
        return document
    out = dict(document)
    if isinstance(out.get("source"), dict) and "observed_at" in out["source"]:
        out["source"] = {**out["source"], "observed_at": _utc(out["source"]["observed_at"])}
    if "expires_at" in out:
        out["expires_at"] = _utc(out["expires_at"])
    return out


def _map_field(name: str, field_map: dict[str, str]) -> str:
    for prefix, target in sorted(field_map.items(), key=lambda kv: -len(kv[0])):
        if name == prefix or name.startswith(prefix + "."):
            return target + name[len(prefix) :]
    return name


def _mapped(reasons: list[Reason], field_map: dict[str, str] | None) -> list[Reason]:
    if not field_map:
        return guards.normalise(reasons)
    return guards.normalise(
        Reason(r.code, _map_field(r.field, field_map) if r.field else None) for r in reasons
    )


# -- adapters (pure field mappings) -----------------------------------------------------------
_COMMON = (
    "content_summary",
    "reasoning_summary",
    "confidence",
    "requested_action_scopes",
    "conflicts",
    "artifact_proof",
    "authority_checkpoint",
    "expires_at",
)

ISSUE_FIX_FIELD_MAP = {
    "source.kind": "feedback_kind",
    "source.actor": "contributor.actor",
    "source.actor_role": "contributor.role",
    "source.evidence_ref": "contributor.evidence_ref",
    "source.observed_at": "contributor.observed_at",
    "source": "contributor",
    "scope.workspace": "workspace",
    "scope.project": "repository",
    "scope.surface": "surface",
    "scope.repository_revision": "repository_revision",
    "scope.subject_ref": "issue_ref",
    "freshness.source_revision": "repository_revision",
    "freshness.current_revision": "current_revision",
}


def _drop_none(mapping: dict[str, Any]) -> dict[str, Any]:
    return {k: val for k, val in mapping.items() if val is not None}


def adapt_issue_fix(event: dict[str, Any]) -> dict[str, Any]:
    """``issue_fix_reward_memory_candidate_adapter_v0`` → ``reward_memory_candidate_v0``.

    Maps the compact issue reference, repository revision, module-owned surface,
    contributor evidence and model reasoning; owns no guard or lifecycle decision.
    """
    contributor = event.get("contributor")
    contributor = contributor if isinstance(contributor, dict) else {}
    candidate = c.instance(
        c.CANDIDATE_SCHEMA,
        target_class=event.get("target_class"),
        source=_drop_none(
            {
                "kind": event.get("feedback_kind"),
                "actor": contributor.get("actor"),
                "actor_role": contributor.get("role"),
                "evidence_ref": contributor.get("evidence_ref"),
                "observed_at": contributor.get("observed_at"),
            }
        ),
        scope=_drop_none(
            {
                "workspace": event.get("workspace"),
                "project": event.get("repository"),
                "surface": event.get("surface"),
                "repository_revision": event.get("repository_revision"),
                "subject_ref": event.get("issue_ref"),
            }
        ),
        freshness=_drop_none(
            {
                "source_revision": event.get("repository_revision"),
                "current_revision": event.get("current_revision"),
            }
        ),
    )
    candidate.update({k: event[k] for k in _COMMON if event.get(k) is not None})
    return _drop_none(candidate)


def adapt_scoped_feedback(event: dict[str, Any]) -> dict[str, Any]:
    """``scoped_feedback_reward_memory_event_v0`` → ``reward_memory_candidate_v0``."""
    keys = ("target_class", "working_context_kind", "source", "scope", "freshness", *_COMMON)
    candidate = c.instance(c.CANDIDATE_SCHEMA)
    candidate.update({k: event[k] for k in keys if event.get(k) is not None})
    return candidate


@dataclass(frozen=True)
class Adapter:
    adapter_id: str
    shape: dict[str, Any]
    to_candidate: Any
    field_map: dict[str, str] | None


ADAPTERS = {
    c.ISSUE_FIX_ADAPTER_SCHEMA: Adapter(
        "issue_fix_maintainer_feedback",
        c.ISSUE_FIX_SHAPE,
        adapt_issue_fix,
        ISSUE_FIX_FIELD_MAP,
    ),
    c.SCOPED_FEEDBACK_EVENT_SCHEMA: Adapter(
        "scoped_feedback", c.SCOPED_FEEDBACK_SHAPE, adapt_scoped_feedback, None
    ),
}


def event_ref(event: dict[str, Any]) -> str:
    """The deterministic identity of a compact event (the whole NFC event)."""
    return prefixed_id("rme_", nfc(event))


def event_key(event: dict[str, Any]) -> str:
    """The idempotency key of a compact event: the digest of its ``event_id``, or ``""``
    when it names none (then only the whole-event identity ``event_ref`` dedupes)."""
    event_id = event.get("event_id") if isinstance(event, dict) else None
    if event_id is None or event_id == "":
        return ""
    return digest_ref({"event_id": event_id})


@dataclass
class AdaptedEvent:
    adapter: Adapter
    event: dict[str, Any]
    event_ref: str
    evaluation: CandidateEvaluation


def adapt_and_evaluate(
    event: Any,
    *,
    now: dt.datetime,
    corpus: guards.CorpusBinding | None = None,
    checkpoints: guards.CheckpointLookup | None = None,
    roles: guards.RoleBindings | None = None,
) -> AdaptedEvent:
    """Shape-scan a compact event with its adapter's contract, map it, evaluate it."""
    version = v.schema(event, tuple(ADAPTERS))
    adapter = ADAPTERS[version]
    event = nfc(event)
    ref = event_ref(event)
    shape = guards.scan(event, adapter.shape)
    if isinstance(event.get("contributor"), list | str | int | float | bool):
        raise invalid("contributor", "contributor must be an object")
    mapped = adapter.to_candidate(event)
    if shape:
        evaluation = CandidateEvaluation(
            None, candidate_ref(mapped), candidate_digest(mapped), guards.normalise(shape)
        )
        return AdaptedEvent(adapter, event, ref, evaluation)
    evaluation = evaluate(
        mapped,
        now=now,
        corpus=corpus,
        field_map=adapter.field_map,
        checkpoints=checkpoints,
        roles=roles,
    )
    return AdaptedEvent(adapter, event, ref, evaluation)


def replacement(record, *, edited: str | None, reasoning: str, facts, control_ref: str):
    """An operator edit's replacement ``reward_memory_candidate_v0`` of an active
    ``record``: the record's scope, confidence and authority with the edited summary; its
    lineage names the record's candidate, its source the live control checkpoint
    (``facts``: a server record, not a string)."""
    content = record.content or {}
    candidate = c.instance(
        c.CANDIDATE_SCHEMA,
        target_class=record.memory_class,
        content_summary=edited,
        reasoning_summary=reasoning,
        source={
            "kind": "operator_correction",
            "actor": facts.actor,
            "actor_role": facts.role,
            "evidence_ref": control_ref,
            "observed_at": clock.iso(clock.now()),
        },
        scope=dict(content.get("scope") or {}),
        confidence=dict(content.get("confidence") or {}),
        requested_action_scopes=sorted(
            authority.normalise_scopes((content.get("authority") or {}).get("action_scopes"))
        ),
        conflicts=[],
        lineage={"prior_candidate_ref": record.candidate_ref},
    )
    checkpoint_ref = (content.get("authority") or {}).get("checkpoint_ref")
    if record.memory_class == c.HARD_POLICY and checkpoint_ref:
        candidate["authority_checkpoint"] = {"checkpoint_ref": checkpoint_ref}
    if content.get("working_context_kind"):
        candidate["working_context_kind"] = content["working_context_kind"]
    return candidate
