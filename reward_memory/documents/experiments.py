"""Experiment documents: LoopX's ``reward_memory_experiment_status_v1`` (with its
``reward_memory_config_runtime_route_v0``), the ``reward_memory_goal_configuration_v0``
of ``configure_goal`` and its ``reward_memory_enablement_receipt_v0``."""

from typing import Any

from loopx_site.core import clock
from loopx_site.core.canonical import digest_ref
from reward_memory import contracts as c
from reward_memory import experiment_config as cfg

CONFIGURATION_SCHEMA = "reward_memory_goal_configuration_v0"
RECEIPT_SCHEMA = "reward_memory_enablement_receipt_v0"
RUNTIME_ROUTE_SCHEMA = "reward_memory_config_runtime_route_v0"
# LoopX's config_runtime_route words: our registry answers like LoopX's project-local one
# (one registry per deployment, Goals read from its Goal table)
REGISTRY_ROLE = "project-local"
GOAL_SOURCE = "registry.goals"
#: The host lifecycles this service wires to Reward Memory (its real coverage, not
#: LoopX's host list): Agent Turn Recall recalls at turn admission and a settlement with
#: a reflection ingests after it; a module boundary hook recalls and ingests in place.
HOST_COVERAGE = (
    {
        "host_id": "agent_turn_recall",
        "automatic_recall": "connected",
        "automatic_ingest": "connected_post_settlement",
    },
    {
        "host_id": "module_boundary_hook",
        "automatic_recall": "connected",
        "automatic_ingest": "connected",
    },
)


def status(route) -> dict[str, Any]:
    """LoopX's ``reward_memory_experiment_status_v1`` of one ``routes.ExperimentRoute``,
    in LoopX's layout: the same base keys whatever the status, the config summary only
    when ``available``, ``reason_code`` / ``binding_revision`` only when set. Ours adds
    ``automation`` (the effective flags as one object), ``surface_count`` and
    ``recall_profile_ids`` (docs/loopx-hosts.md). Never a scope ref or a local path."""
    binding = route.binding
    automation = route.automation
    document: dict[str, Any] = {
        "ok": True,
        "schema_version": c.EXPERIMENT_STATUS_SCHEMA,
        "goal_id": route.goal_id,
        "agent_id": route.agent_id,
        "experimental": bool(binding and binding.experimental),
        "enabled": bool(binding and binding.enabled),
        "configured_for_agent": bool(binding and route.agent_id in (binding.agent_allowlist or [])),
        "config_pointer_registered": bool(binding and binding.config_path),
        **automation,
        "automation": automation,
        "config_runtime_route": {
            "schema_version": RUNTIME_ROUTE_SCHEMA,
            "registry_source": "invoked_registry",
            "registry_role": REGISTRY_ROLE,
            "runtime_scope": "project_runtime",
            "goal_source": GOAL_SOURCE,
            "config_source": "goal_repo_relative_config_pointer",
            "readback_status": route.readback_status,
            "exact_readback_verified": route.available,
        },
        "external_writes_performed": False,
        "host_coverage": [dict(host) for host in HOST_COVERAGE],
        "status": route.status,
        "available": route.available,
    }
    if binding is not None:
        document["binding_revision"] = binding.revision
    if route.reason_code is not None:
        document["reason_code"] = route.reason_code
    if route.status in ("enablement_stale", "enablement_unverified"):
        document["writability_verified"] = False
        document["exact_readback_verified"] = False
    if not route.available:
        return document
    config = route.config
    surfaces = sorted(config.surfaces.items())
    document.update(
        {
            "config_schema_version": cfg.CONFIG_SCHEMA,
            "provider_id": config.provider_id,
            "corpus_count": len(config.corpus_ids),
            "corpus_ids": sorted(config.corpus_ids),
            "surface_ids": [surface_id for surface_id, _ in surfaces],
            "surface_profiles": [
                {
                    "surface_id": surface.surface_id,
                    "adapter": surface.adapter,
                    "corpus_count": len(surface.corpus_ids),
                    "recall_profile_id": surface.recall_profile["profile_id"],
                }
                for _, surface in surfaces
            ],
            "automation_intent": dict(config.automation_intent),
            "raw_content_captured": False,
            "writability_verified": True,
            "exact_readback_verified": True,
            "enablement_receipt_status": (route.receipt or {}).get("status"),
            "surface_count": len(config.surfaces),
            "recall_profile_ids": config.recall_profile_ids,
        }
    )
    if len(surfaces) == 1:
        surface = surfaces[0][1]
        document["adapter"] = surface.adapter
        document["corpus_id"] = surface.ingest_corpus_id
    return document


def configuration(result) -> dict[str, Any]:
    """``reward_memory_goal_configuration_v0`` of a ``services.experiments.Configuration``:
    the preview's provider preflight, or the execution's canary result with the committed
    binding and its stored enablement receipt (without the canary refs' digests)."""
    status, provider, summary = result.status, result.provider, result.summary
    goal_id, agent_id = result.goal_id, result.agent_id
    preview = status == "preview"
    committed = result.binding is not None
    revision = result.binding.revision if committed else None
    receipt = result.receipt
    if receipt is not None:
        receipt = {k: v for k, v in receipt.items() if k != "canary_ref_digests"}
    return {
        "ok": True,
        "schema_version": CONFIGURATION_SCHEMA,
        "status": provider["status"] if preview else status,
        "executed": not preview,
        "goal_id": goal_id,
        "agent_id": agent_id,
        "binding_committed": committed,
        "binding_revision": revision,
        "provider_preflight": provider if preview else None,
        "canary": None if preview else provider,
        "enablement_receipt": receipt,
        **summary,
        "external_writes_performed": bool(committed or (not preview and provider)),
        "user_gate": False,
    }


def enablement_receipt(agent, config, config_digest: str, canaries, now) -> dict[str, Any]:
    """``reward_memory_enablement_receipt_v0``: the verified canaries of one enablement
    of ``agent`` with the parsed ``config``; ``receipt_id`` is its digest."""
    receipt = {
        "schema_version": RECEIPT_SCHEMA,
        "status": "verified",
        "goal_id": agent.goal.goal_id,
        "agent_id": agent.agent_id,
        "provider_id": config.provider_id,
        "config_digest": config_digest,
        "canary_ref_digests": [r.resource_ref_digest for _, r in canaries],
        "writability_verified": True,
        "exact_readback_verified": True,
        "recallable": False,
        "verified_at": clock.iso(now),
    }
    receipt["receipt_id"] = digest_ref(receipt)
    return receipt
