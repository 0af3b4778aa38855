"""Registry rows as documents: corpora, their health, checkpoints and records.

The selectors read; these render (the CLI, the API, the admin and the services that
answer with a row all use the same function).
"""

from typing import Any

from loopx_site.core import clock
from loopx_site.core.canonical import digest_ref
from reward_memory import contracts as c
from reward_memory.domain import authority
from reward_memory.models import AuthorityCheckpoint, Corpus, MemoryRecord, StandingPolicy

CHECKPOINT_SCHEMA = "reward_memory_authority_checkpoint_v0"


def checkpoint_payload(row: AuthorityCheckpoint, *, now=None) -> dict[str, Any]:
    """``reward_memory_authority_checkpoint_v0``: one operator-granted checkpoint and its
    state now."""
    state = authority.checkpoint_state(row.revoked_at, row.expires_at, now or clock.now())
    return {
        "schema_version": CHECKPOINT_SCHEMA,
        "checkpoint_id": row.checkpoint_id,
        "project": row.project,
        "actor": row.actor,
        "role": row.role,
        "action_scopes": list(row.action_scopes or []),
        "verified_by": row.verified_by,
        "verified_at": clock.iso(row.verified_at),
        "expires_at": clock.iso(row.expires_at),
        "revoked_at": clock.iso(row.revoked_at),
        "revoked_by": row.revoked_by or None,
        "state": state,
    }


def policy_payload(policy: StandingPolicy) -> dict[str, Any]:
    return {
        "surface": policy.surface,
        "policy_digest": policy.policy_digest,
        "active": policy.active,
        "created_at": clock.iso(policy.created_at),
    }


def corpus_payload(corpus: Corpus) -> dict[str, Any]:
    """The public registry row of a corpus (``reward_memory_corpus_v0``)."""
    return {
        "schema_version": c.CORPUS_SCHEMA,
        "corpus_id": corpus.corpus_id,
        "memory_class": corpus.memory_class,
        "owner": corpus.owner,
        "reviewer": corpus.reviewer,
        "authority_source": corpus.authority_source,
        "maintenance": {"retirement_authority": corpus.retirement_authority},
        "project": corpus.project,
        "surfaces": list(corpus.surfaces or []),
        "freshness": dict(corpus.freshness_policy or {}),
        "privacy": dict(corpus.privacy or {}),
        "provider": {"provider_id": corpus.provider_id, "binding_ref": corpus.provider_binding_ref},
        "allowlisted_agents": len(corpus.agent_allowlist or []),
        "standing_policies": [
            policy_payload(p)
            for p in sorted(corpus.policies.all(), key=lambda p: (p.surface, p.created_at))
            if p.active
        ],
        "revision": corpus.revision,
        "active": corpus.active,
        "created_at": clock.iso(corpus.created_at),
        "updated_at": clock.iso(corpus.updated_at),
    }


def corpus_health(facts: dict[str, Any]) -> dict[str, Any]:
    """``reward_memory_corpus_health_v0`` of ``services.corpora.health_facts`` (nothing
    written)."""
    return {"schema_version": c.CORPUS_HEALTH_SCHEMA, **facts}


def health_summary(health: dict[str, Any]) -> str:
    """Compact one-line rendering for admin and text output (states stay separate)."""
    marks = []
    for key in c.HEALTH_STATES:
        label = key.split("_")[0] if key != "memory_applied_with_receipt" else "applied"
        if key == "result_readback_verified":
            label = "readback"
        elif key == "retrieval_query_succeeded":
            label = "query"
        marks.append(f"{label}:{'yes' if health['health'][key]['value'] else 'no'}")
    return " ".join(marks)


def record_envelope(record: MemoryRecord) -> dict[str, Any]:
    """``reward_memory_active_record_v0``: the provider content plus current lifecycle.

    Private (it carries the summary); public projections use ``record_public``.
    """
    content = record.content or {}
    supersedes = list(record.supersedes.values_list("record_ref", flat=True))
    return {
        "schema_version": c.ACTIVE_RECORD_SCHEMA,
        "record_ref": record.record_ref,
        "corpus_id": record.corpus.corpus_id,
        "memory_class": record.memory_class,
        "candidate_ref": record.candidate_ref,
        "content_digest": record.content_digest,
        "summary": record.summary,
        "source": content.get("source"),
        "scope": content.get("scope"),
        "authority": content.get("authority"),
        "confidence": content.get("confidence"),
        "activation": content.get("activation"),
        "lifecycle_state": record.lifecycle_state,
        "supersession": {
            "supersedes": sorted(supersedes),
            "superseded_by": record.superseded_by.record_ref if record.superseded_by else None,
        },
        "revocation": record.revocation,
        "retirement": record.retirement,
        "expiry": {"expires_at": clock.iso(record.expires_at)},
        "privacy": content.get("privacy"),
        "readback_verified_at": clock.iso(record.readback_verified_at),
        "activated_at": clock.iso(record.activated_at),
    }


def record_public(record: MemoryRecord) -> dict[str, Any]:
    return {
        "memory_ref_digest": digest_ref(record.record_ref),
        "provider_ref_digest": record.provider_ref_digest,
        "memory_class": record.memory_class,
        "surface": record.surface,
        "lifecycle_state": record.lifecycle_state,
        "lineage": {
            "candidate_ref": record.candidate_ref,
            "activation_basis": record.activation_basis,
            "basis_ref": record.policy_digest
            or (record.review.review_id if record.review else None),
        },
    }
