"""The immutable provider content of an activation (``reward_memory_provider_content_v0``):
the bytes a provider stores and recall reads back exactly."""

from typing import Any

from loopx_site.core import clock
from reward_memory import contracts as c


def provider_content(plan) -> dict[str, Any]:
    """The content of ``plan`` (an ``services.activation.ActivationPlan`` whose
    ``record_ref`` is set): the bound source actor and role of the server record, never
    the body's strings."""
    corpus = plan.corpus
    candidate = plan.candidate
    is_policy = candidate["target_class"] == c.HARD_POLICY
    checkpoint = candidate.get("authority_checkpoint") or {}
    source = candidate["source"]
    content: dict[str, Any] = {
        "schema_version": c.PROVIDER_CONTENT_SCHEMA,
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
