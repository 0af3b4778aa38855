"""The Reward Memory contract: classes, precedence, stages, health states, schema names,
lifecycle states and guard reason codes. Pure data; ``architecture()`` renders it.

Core idea (seed 003): keep feedback evidence, policy content and action authority apart.
Content may be derived; authority never is.
"""

import copy
import json
from pathlib import Path
from typing import Any

from loopx_site.core import clock

# -- schema versions (exact names from the seed / spec) --------------------------------
CANDIDATE_SCHEMA = "reward_memory_candidate_v0"
REVIEW_SCHEMA = "reward_memory_candidate_review_v0"
STANDING_POLICY_SCHEMA = "reward_memory_standing_policy_v0"
ACTIVE_RECORD_SCHEMA = "reward_memory_active_record_v0"
INGEST_RECEIPT_SCHEMA = "reward_memory_ingest_receipt_v0"
RECALL_REQUEST_SCHEMA = "reward_memory_recall_request_v0"
ISSUE_FIX_ADAPTER_SCHEMA = "issue_fix_reward_memory_candidate_adapter_v0"
SCOPED_FEEDBACK_EVENT_SCHEMA = "scoped_feedback_reward_memory_event_v0"
# Names this project defines where the seed names none (documented in the spec file).
CORPUS_SCHEMA = "reward_memory_corpus_v0"
CORPUS_HEALTH_SCHEMA = "reward_memory_corpus_health_v0"
RECALL_RESULT_SCHEMA = "reward_memory_recall_result_v0"
RECALL_PACKET_SCHEMA = "reward_memory_recall_packet_v0"
#: a recall's status in LoopX's words (``reward_memory_recall_v0``); others as ours
LOOPX_RECALL_STATUS = {"ok": "completed", "empty": "empty"}
APPLICATION_SCHEMA = "reward_memory_application_v0"
APPLICATION_RECEIPT_SCHEMA = "reward_memory_application_receipt_v0"
PROVIDER_CONTENT_SCHEMA = "reward_memory_provider_content_v0"
RECONCILIATION_SCHEMA = "reward_memory_ingest_reconciliation_v0"
ARCHITECTURE_SCHEMA = "reward_memory_architecture_v0"
EXPERIMENT_STATUS_SCHEMA = "reward_memory_experiment_status_v1"
REFLECTION_SCHEMA = "turn_reward_memory_reflection_v0"
REFLECTION_VALIDATION_SCHEMA = "reward_memory_reflection_validation_v0"
REFLECTION_AWAITING = "awaiting_evidence_validation"
REFLECTION_FINALIZED = "finalized"
REFLECTION_STATES = (REFLECTION_AWAITING, REFLECTION_FINALIZED, "ingest_pending")
REFLECTION_SOURCE_TYPES = ("research", "simulation", "real", "engineering")

# -- memory classes ----------------------------------------------------------------------
RUN_BOUND_REWARD = "run_bound_reward"
HARD_POLICY = "hard_policy"
SOFT_PREFERENCE = "soft_preference"
PROCEDURAL_EXPERIENCE = "procedural_experience"
WORKING_CONTEXT = "working_context"
MEMORY_CLASSES = (
    RUN_BOUND_REWARD,
    HARD_POLICY,
    SOFT_PREFERENCE,
    PROCEDURAL_EXPERIENCE,
    WORKING_CONTEXT,
)
ADVISORY_CLASSES = tuple(c for c in MEMORY_CLASSES if c != HARD_POLICY)
WORKING_CONTEXT_KINDS = ("fresh_execution_context", "session_working_memory")

CLASS_CONTRACT: dict[str, dict[str, str]] = {
    RUN_BOUND_REWARD: {
        "source_scope": "explicit human evaluation of one exact goal/run",
        "authority": "evidence only; must become a candidate through activation policy "
        "to influence later behaviour",
        "lifecycle": "append-only overlay; corrections and revocations append references",
    },
    HARD_POLICY: {
        "source_scope": "explicit user/repo/operator authority, or policy derived from "
        "verified owner/core-contributor evidence bound to an existing project/action scope",
        "authority": "constrains or vetoes inside the verified scope; never derives "
        "credentials, new publish/production scope, cross-user or cross-repo authority",
        "lifecycle": "active until superseded/revoked/expired; weak derivations expire or "
        "return to review",
    },
    SOFT_PREFERENCE: {
        "source_scope": "explicit feedback, user choice or reviewed candidate bound to "
        "workspace/project and a module-owned surface",
        "authority": "advisory ranking or rewrite only",
        "lifecycle": "persisted only after explicit review; edit/reject/supersede/revoke/retire",
    },
    PROCEDURAL_EXPERIENCE: {
        "source_scope": "revisioned trajectories, distilled experience, maintainer "
        "corrections, accepted/rejected changes with repository/module/revision scope",
        "authority": "advice only after verification against the current artifact",
        "lifecycle": "trajectories append-only; distilled supersedable; new source truth "
        "marks stale/quarantine/refute/retire",
    },
    WORKING_CONTEXT: {
        "source_scope": "fresh_execution_context (registry/state/todo/quota/checkout "
        "observation) and session_working_memory",
        "authority": "current execution only; never becomes policy",
        "lifecycle": "bound to its session/archive revision",
    },
}

# Guarded precedence: a safety/attention order, not a decision table.
PRECEDENCE = (
    "explicit_action_authority_and_privacy",
    "active_in_scope_hard_policy",
    "fresh_working_context_and_current_source_of_truth",
    "artifact_verified_procedural_experience",
    "active_in_scope_soft_preference",
    "run_bound_reward_as_evidence_only",
)

HEALTH_STATES = (
    "corpus_present",
    "index_present",
    "retrieval_query_succeeded",
    "result_readback_verified",
    "memory_applied_with_receipt",
)

CONFIDENCE_LEVELS = ("low", "medium", "high")

# -- record lifecycle ------------------------------------------------------------------
PENDING = "pending_activation"
ACTIVE = "active"
SUPERSEDED = "superseded"
REVOKED = "revoked"
RETIRED = "retired"
EXPIRED = "expired"
# procedural_experience only: new source truth marks it
STALE = "stale"
QUARANTINED = "quarantined"
REFUTED = "refuted"
EXPERIENCE_MARKS = (STALE, QUARANTINED, REFUTED)
LIFECYCLE_STATES = (PENDING, ACTIVE, SUPERSEDED, REVOKED, RETIRED, EXPIRED, *EXPERIENCE_MARKS)
TERMINAL_STATES = (SUPERSEDED, REVOKED, RETIRED, EXPIRED, *EXPERIENCE_MARKS)
# Allowed transitions; no state is entered twice, so history is a simple path.
TRANSITIONS: dict[str, tuple[str, ...]] = {
    PENDING: (ACTIVE, RETIRED),
    ACTIVE: (SUPERSEDED, REVOKED, RETIRED, EXPIRED, STALE, QUARANTINED, REFUTED),
    SUPERSEDED: (),
    REVOKED: (),
    RETIRED: (),
    EXPIRED: (),
    STALE: (RETIRED, REFUTED),
    QUARANTINED: (RETIRED, REFUTED),
    REFUTED: (),
}
# Classes whose corpus must declare max_source_age_days (freshness is their contract).
FRESHNESS_REQUIRED_CLASSES = (PROCEDURAL_EXPERIENCE, WORKING_CONTEXT)

# -- authority ----------------------------------------------------------------------------
OWNER_ROLE = "owner"
REVIEWER_ROLE = "reviewer"
RETIREMENT_ROLE = "retirement_authority"
AUTHORITY_SOURCE_ROLE = "authority_source"
CORPUS_ROLES = (OWNER_ROLE, REVIEWER_ROLE, RETIREMENT_ROLE, AUTHORITY_SOURCE_ROLE)
CLOSING_DECISIONS = ("reject", "retire", "revoke", "refute")

# -- review -----------------------------------------------------------------------------
DECISIONS = ("accept", "edit", "reject", "retire", "no_write")
GUARD_PASSED = "passed"
GUARD_BLOCKED = "guard_blocked"

# -- ingest -----------------------------------------------------------------------------
INGEST_PLANNED = "planned"
INGEST_ACTIVATED = "activated"
INGEST_PROVIDER_UNAVAILABLE = "provider_unavailable"
INGEST_COMMIT_PENDING = "commit_pending"
INGEST_READBACK_MISMATCH = "readback_mismatch"
INGEST_STATUSES = (
    INGEST_PLANNED,
    GUARD_BLOCKED,
    INGEST_ACTIVATED,
    INGEST_PROVIDER_UNAVAILABLE,
    INGEST_COMMIT_PENDING,
    INGEST_READBACK_MISMATCH,
)
INGEST_RETRYABLE = (INGEST_PROVIDER_UNAVAILABLE, INGEST_COMMIT_PENDING, INGEST_READBACK_MISMATCH)
ADAPTERS = {
    ISSUE_FIX_ADAPTER_SCHEMA: "issue_fix_maintainer_feedback",
    SCOPED_FEEDBACK_EVENT_SCHEMA: "scoped_feedback",
}

# -- recall -----------------------------------------------------------------------------
FUNCTION_BOUNDARY = "function_boundary"
BOUNDED_AGENTIC_SEARCH = "bounded_agentic_search"
RECALL_MODES = (FUNCTION_BOUNDARY, BOUNDED_AGENTIC_SEARCH)
MAX_QUERIES = {FUNCTION_BOUNDARY: 1, BOUNDED_AGENTIC_SEARCH: 3}
RECALL_STATUSES = ("preview", "ok", "empty", "guard_blocked", "provider_unavailable")
APPLICATION_DECISIONS = ("apply", "ignore", "refute")
APPLICATION_STATUSES = ("applied", "not_applied", "refuted")

# -- guard reason codes (every one has a test) ------------------------------------------
REASON_CODES: dict[str, str] = {
    # public-safe shape / raw-content boundary
    "unmodelled_field": "a field the contract does not model",
    "raw_content_field": "a raw content field (chat, transcript, tool log, diff, quote …)",
    "authority_field": "a field that would grant authority or bind a provider directly",
    "url_not_allowed": "a URL where only opaque references are allowed",
    "url_with_credentials": "a URL carrying credentials",
    "local_path": "an absolute or home-relative local path",
    "credential_like_content": "a credential-like string",
    "content_not_compact": "content summary exceeds the compact boundary",
    # scope binding
    "scope_unbound": "the class requires a scope field that is missing",
    "class_mismatch": "memory class differs from the corpus / standing policy",
    "project_mismatch": "project differs from the corpus / standing policy / request",
    "surface_mismatch": "surface is not the corpus's / standing policy's surface",
    # freshness and conflicts
    "source_stale": "source observation is older than the corpus freshness policy",
    "source_in_future": "source observation time is in the future",
    "source_not_current": "source revision is not the current revision",
    "unresolved_conflict": "unresolved conflicting sources are observed",
    "already_expired": "expires_at is not in the future",
    # current-artifact proof
    "artifact_proof_missing": "current-artifact proof is required but absent or unverified",
    "weak_policy_needs_expiry": "a low-confidence hard_policy must carry expires_at",
    "weak_policy_needs_review": "a low-confidence hard_policy activates only by review",
    # authority
    "advisory_requests_authority": "an advisory class requests action authority",
    "checkpoint_missing": "hard_policy without an authority checkpoint",
    "checkpoint_unverified": "no live operator-granted checkpoint has that id",
    "checkpoint_revoked": "the authority checkpoint was revoked by an operator",
    "checkpoint_expired": "the authority checkpoint has expired",
    "checkpoint_actor_mismatch": "checkpoint actor differs from the source actor",
    "checkpoint_role_mismatch": "checkpoint role differs from the source actor role",
    "checkpoint_project_mismatch": "checkpoint project differs from the candidate project",
    "action_scope_unbound": "hard_policy requests no action scope to constrain",
    "action_scope_not_in_checkpoint": "requested action scopes exceed the checkpoint's",
    "forbidden_action_scope": "an action scope of a forbidden authority family "
    "(reward_memory.domain.authority.FORBIDDEN_AUTHORITY_FAMILIES)",
    # standing policy (ingest)
    "standing_policy_missing": "no active standing policy for the corpus and surface",
    "source_kind_not_allowed": "source kind not allowed by the standing policy",
    "actor_role_not_allowed": "actor role not verified by the standing policy",
    "actor_role_unverified": "no server record (live authority checkpoint of the project, "
    "the authenticated operator account, or a corpus role the caller holds) binds the "
    "source actor to the claimed role",
    "action_scope_not_in_policy": "requested action scopes exceed the standing policy's",
    "record_closed": "the candidate's record was closed; a closed record never reactivates",
    "lineage_closed": "the candidate (or its content) was rejected/retired/revoked in this "
    "corpus; only an operator reopen or a candidate referencing it may bring it back",
    # recall (all stop before the provider is called)
    "corpus_not_registered": "the request names no registered corpus the caller may see "
    "(a missing one and one it may not read answer alike)",
    "corpus_not_active": "the corpus is retired",
    "agent_not_allowlisted": "the calling Agent is not allowlisted for the corpus",
    "read_authority_missing": "no read-authority checkpoint",
    "read_authority_unverified": "the read-authority ref names no server record for this "
    "caller (its own allowlist entry or an operator's live read checkpoint); a caller's "
    "verified flag proves nothing",
    "read_authority_mismatch": "the checkpoint binds another corpus/project/surface/scope",
    "revision_mismatch": "the request's corpus revision is not current",
    "freshness_stale": "the request's freshness observation is not current",
    "provider_binding_mismatch": "the request's provider binding is not the corpus's",
    "actor_peer_mismatch": "the URI's peer is not the configured peer of this Goal/Agent",
    "query_count_invalid": "the mode's query count is not met",
    "query_budget_exceeded": "more queries than the mode allows",
    "query_not_public_safe": "a query carries a URL, path or credential",
}


# LoopX's wire names (``loopx/capabilities/reward_memory/architecture.py``): the
# precedence ids and the design-level lifecycle a LoopX host reads.
LOOPX_PRECEDENCE = (
    "explicit_action_authority_and_privacy_boundary",
    "active_in_scope_hard_policy",
    "fresh_working_context_and_current_source_of_truth",
    "current_artifact_verified_procedural_experience",
    "active_in_scope_soft_preference",
    "run_bound_reward_as_evidence_only",
)
LOOPX_LIFECYCLE_STATES = (
    "observed",
    "candidate",
    "active",
    "superseded",
    "revoked",
    "expired",
    "retired",
)
CLASS_AUTHORITY = {
    RUN_BOUND_REWARD: "outcome_evidence_only",
    HARD_POLICY: "constraint_or_veto_within_verified_actor_scope",
    SOFT_PREFERENCE: "advisory_ranking_or_rewrite",
    PROCEDURAL_EXPERIENCE: "advisory_until_current_artifact_verification",
    WORKING_CONTEXT: "fresh_execution_context_not_long_term_memory",
}


# every record's fields after its class (``class_id`` in LoopX's list, ``memory_class`` in ours)
RECORD_FIELDS = (
    "source",
    "scope",
    "authority",
    "confidence",
    "lifecycle_state",
    "supersession",
    "revocation",
    "expiry",
    "privacy",
)


def _loopx_architecture() -> dict[str, Any]:
    path = Path(__file__).resolve().parent / "fixtures" / "loopx_architecture.json"
    return json.loads(path.read_text(encoding="utf-8"))


# LoopX's design-contract sections, served as LoopX 2.1.1 prints them (per-class
# ``memory_classes`` fields, field and routing contracts, conflict resolution, safety
# invariants, capability reuse, provider alignment, pilot/meta delegation, stages).
LOOPX_ARCHITECTURE = _loopx_architecture()
LOOPX_ARCHITECTURE_SECTIONS = (
    "field_contracts",
    "routing_contract",
    "conflict_resolution",
    "safety_invariants",
    "existing_capability_reuse",
    "provider_alignment",
    "pilot_meta_delegation",
    "stage_boundaries",
)


def _stages() -> list[dict[str, Any]]:
    """The stages of the contract, each with what it writes and its schemas."""
    return [
        {
            "stage": 1,
            "name": "corpus_registry_and_health",
            "writes_provider": False,
            "health_states": list(HEALTH_STATES),
            "health_states_merged": False,
        },
        {
            "stage": 2,
            "name": "candidates_and_review",
            "schemas": [CANDIDATE_SCHEMA, REVIEW_SCHEMA, ISSUE_FIX_ADAPTER_SCHEMA],
            "decisions": list(DECISIONS),
            "guard_blocked_collapses_to": "no_write",
        },
        {
            "stage": 3,
            "name": "recall_and_application",
            "schemas": [
                RECALL_REQUEST_SCHEMA,
                RECALL_RESULT_SCHEMA,
                RECALL_PACKET_SCHEMA,
                APPLICATION_RECEIPT_SCHEMA,
            ],
            "modes": {m: {"max_queries": MAX_QUERIES[m]} for m in RECALL_MODES},
        },
        {
            "stage": "ingest",
            "name": "minimal_ingest_loop",
            "schemas": [
                STANDING_POLICY_SCHEMA,
                ACTIVE_RECORD_SCHEMA,
                INGEST_RECEIPT_SCHEMA,
                SCOPED_FEEDBACK_EVENT_SCHEMA,
            ],
            "pipeline": [
                "candidate_ref_dedupe",
                "standing_policy_accept",
                "active_envelope",
                "provider_sync",
                "function_boundary_recall",
                "triple_readback",
                "ingest_receipt",
            ],
            "statuses": list(INGEST_STATUSES),
            "fail_open": True,
        },
    ]


def architecture() -> dict[str, Any]:
    """The machine-readable contract printed by ``reward_memory architecture``: LoopX's
    ``reward_memory_architecture_v0`` document (``status: design_contract``, its
    ``memory_classes`` and design sections from ``fixtures/loopx_architecture.json``,
    ``precedence`` ids, design ``lifecycle_states``) with this project's detail beside
    it under names LoopX does not use (listed in docs/loopx-hosts.md)."""
    wire = copy.deepcopy(LOOPX_ARCHITECTURE)
    return {
        "ok": True,
        "schema_version": ARCHITECTURE_SCHEMA,
        "status": "design_contract",
        "memory_classes": wire["memory_classes"],
        "required_record_fields": ["class_id", *RECORD_FIELDS],
        "precedence": list(LOOPX_PRECEDENCE),
        "lifecycle_states": list(LOOPX_LIFECYCLE_STATES),
        **{key: wire[key] for key in LOOPX_ARCHITECTURE_SECTIONS},
        "external_writes_performed": False,
        "raw_memory_captured": False,
        "core_boundary": "feedback evidence, policy content and action authority stay "
        "apart; content may be derived, authority never is",
        "classes": [{"memory_class": c, **CLASS_CONTRACT[c]} for c in MEMORY_CLASSES],
        "working_context_kinds": list(WORKING_CONTEXT_KINDS),
        "precedence_layers": [
            {"rank": i + 1, "layer": layer} for i, layer in enumerate(PRECEDENCE)
        ],
        "precedence_is_decision_table": False,
        "record_contract": ["memory_class", *RECORD_FIELDS],
        "confidence_levels": list(CONFIDENCE_LEVELS),
        "confidence_raises_authority": False,
        "record_lifecycle_states": list(LIFECYCLE_STATES),
        "lifecycle_transitions": {k: list(v) for k, v in TRANSITIONS.items()},
        "stages": _stages(),
        "guard_reason_codes": sorted(REASON_CODES),
        "provider_interface": ["preflight", "write", "recall", "readback", "retire", "canary"],
        "user_gates": 0,
    }


# -- shapes ------------------------------------------------------------------------------
# A shape maps each modelled key to None (a leaf) or a nested shape (an object).
def _leaves(*names: str) -> dict[str, None]:
    return dict.fromkeys(names)


SOURCE_SHAPE = _leaves("kind", "actor", "actor_role", "evidence_ref", "observed_at")
SCOPE_SHAPE = _leaves(
    "workspace", "project", "surface", "repository_revision", "subject_ref", "session_revision"
)
CONFIDENCE_SHAPE = {"level": None, "basis": None}
FRESHNESS_SHAPE = {"source_revision": None, "current_revision": None}
ARTIFACT_SHAPE = _leaves("required", "verified", "artifact_ref", "artifact_digest")
CHECKPOINT_SHAPE = _leaves(
    "checkpoint_ref", "verified", "actor", "role", "project", "action_scopes"
)
COMMON_CANDIDATE_KEYS = {
    "content_summary": None,
    "reasoning_summary": None,
    "confidence": CONFIDENCE_SHAPE,
    "requested_action_scopes": None,
    "conflicts": None,
    "artifact_proof": ARTIFACT_SHAPE,
    "authority_checkpoint": CHECKPOINT_SHAPE,
    "expires_at": None,
}
CANDIDATE_SHAPE = {
    "schema_version": None,
    "target_class": None,
    "working_context_kind": None,
    "source": SOURCE_SHAPE,
    "scope": SCOPE_SHAPE,
    "freshness": FRESHNESS_SHAPE,
    "lineage": {"prior_candidate_ref": None},
    **COMMON_CANDIDATE_KEYS,
}
SCOPED_FEEDBACK_SHAPE = {
    "schema_version": None,
    "event_id": None,
    "corpus_id": None,
    "target_class": None,
    "working_context_kind": None,
    "source": SOURCE_SHAPE,
    "scope": SCOPE_SHAPE,
    "freshness": FRESHNESS_SHAPE,
    **COMMON_CANDIDATE_KEYS,
}
ISSUE_FIX_SHAPE = {
    "schema_version": None,
    "event_id": None,
    "corpus_id": None,
    "target_class": None,
    "issue_ref": None,
    "workspace": None,
    "repository": None,
    "repository_revision": None,
    "current_revision": None,
    "surface": None,
    "feedback_kind": None,
    "contributor": {"actor": None, "role": None, "evidence_ref": None, "observed_at": None},
    **COMMON_CANDIDATE_KEYS,
}
RECALL_SHAPE = {
    "schema_version": None,
    "goal_id": None,
    "agent_id": None,
    "corpus_id": None,
    "project": None,
    "surface": None,
    "mode": None,
    "queries": None,
    "limit": None,
    "read_authority": {
        "checkpoint_ref": None,
        "verified": None,
        "corpus_id": None,
        "project": None,
        "surface": None,
        "scope": None,
    },
    "freshness": {"observed_at": None, "corpus_revision": None},
    "conflicts": None,
    "provider_binding_ref": None,
    "actor_peer_id": None,
    "request_id": None,
}
APPLICATION_SHAPE = {
    "schema_version": None,
    "recall_id": None,
    "decision": None,
    "memory_refs": None,
    "reasoning_summary": None,
    "artifact_verification": {"artifact_ref": None, "artifact_digest": None, "verified": None},
}


# -- input documents built by code (LoopX mapping, in-process callers, evaluation) ----------
def instance(schema: str, **fields: Any) -> dict[str, Any]:
    """One input document of ``schema`` (``schema_version`` first, then ``fields``)."""
    return {"schema_version": schema, **fields}


def recall_request(
    *,
    goal_id: Any,
    agent_id: Any,
    corpus_id: Any,
    project: Any,
    surface: Any,
    mode: Any,
    queries: Any,
    limit: Any,
    read_authority: dict[str, Any],
    observed_at: Any,
    corpus_revision: Any,
    conflicts: list[str],
    provider_binding_ref: Any,
) -> dict[str, Any]:
    """Our flat ``reward_memory_recall_request_v0`` (``read_authority`` always carries
    ``scope: read``)."""
    return instance(
        RECALL_REQUEST_SCHEMA,
        goal_id=goal_id,
        agent_id=agent_id,
        corpus_id=corpus_id,
        project=project,
        surface=surface,
        mode=mode,
        queries=queries,
        limit=limit,
        read_authority={**read_authority, "scope": "read"},
        freshness={"observed_at": observed_at, "corpus_revision": corpus_revision},
        conflicts=conflicts,
        provider_binding_ref=provider_binding_ref,
    )


def standing_policy(fields: dict[str, Any]) -> dict[str, Any]:
    """The normalised ``reward_memory_standing_policy_v0`` a registration stores (the
    input contract, checked; its digest is the policy's identity, so the key order is
    this one)."""
    return {"schema_version": STANDING_POLICY_SCHEMA, **fields}


def reflection(*, surface_id: str, source_types: list[str], evidence_refs: list[str], event):
    """The normalised ``turn_reward_memory_reflection_v0`` (the input contract, checked;
    its digest is the reflection candidate's identity)."""
    return {
        "schema_version": REFLECTION_SCHEMA,
        "surface_id": surface_id,
        "source_types": sorted(source_types),
        "evidence_refs": sorted(evidence_refs),
        "event": event,
    }


# -- provider wire content ------------------------------------------------------------
def provider_content(plan) -> dict[str, Any]:
    """``reward_memory_provider_content_v0``: the immutable bytes a provider stores and
    recall reads back exactly (a provider wire packet, not a document). The content of
    ``plan`` (an ``services.activation.ActivationPlan`` whose
    ``record_ref`` is set): the bound source actor and role of the server record, never
    the body's strings."""
    corpus = plan.corpus
    candidate = plan.candidate
    is_policy = candidate["target_class"] == HARD_POLICY
    checkpoint = candidate.get("authority_checkpoint") or {}
    source = candidate["source"]
    content: dict[str, Any] = {
        "schema_version": PROVIDER_CONTENT_SCHEMA,
        "record_ref": plan.record_ref,
        "corpus_id": corpus.corpus_id,
        "memory_class": candidate["target_class"],
        "candidate_ref": plan.candidate_ref,
        "summary": candidate["content_summary"],
        "reasoning_summary": candidate["reasoning_summary"],
        "source": {
            "kind": source["kind"],
            "ref": source["evidence_ref"],
            # the bound actor and role of the server record, never the body's strings
            "actor": plan.source_binding.actor if plan.source_binding else source["actor"],
            "actor_role": (
                plan.source_binding.role if plan.source_binding else source["actor_role"]
            ),
            "role_basis": (
                {"basis": plan.source_binding.basis, "ref": plan.source_binding.ref}
                if plan.source_binding
                else None
            ),
            "observed_at": source["observed_at"],
        },
        "scope": dict(candidate["scope"]),
        "authority": {
            "kind": "constraint" if is_policy else "advisory",
            "action_scopes": sorted(set(candidate.get("requested_action_scopes") or [])),
            "checkpoint_ref": checkpoint.get("checkpoint_ref") if is_policy else None,
            "authority_source": corpus.authority_source,
        },
        "confidence": dict(candidate["confidence"]),
        "activation": {
            "basis": plan.basis,
            "basis_ref": plan.basis_ref,
            "writer": corpus.owner,
            "observed_at": clock.iso(plan.observed_at),
        },
        "expiry": {"expires_at": clock.iso(plan.expires_at)},
        "privacy": dict(corpus.privacy or {}),
    }
    if candidate.get("working_context_kind"):
        content["working_context_kind"] = candidate["working_context_kind"]
    if plan.prior_candidate_ref:
        content["lineage"] = {"prior_candidate_ref": plan.prior_candidate_ref}
    return content


# A dogfood batch's vocabulary (LoopX's words): how an application ended, and what a
# reviewer said it was worth.
DISPOSITIONS = ("applied", "not_applied", "refuted")
UTILITY_LABELS = ("helpful", "harmful", "neutral", "unknown")
