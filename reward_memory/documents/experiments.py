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
REGISTRY_ROLE = "service_registry"


def status(route) -> dict[str, Any]:
    """``reward_memory_experiment_status_v1`` of one ``selectors.ExperimentRoute``: counts,
    profile ids, effective automation with its intent — never a scope ref or a path."""
    binding = route.binding
    automation = route.automation
    payload: dict[str, Any] = {
        "ok": True,
        "schema_version": c.EXPERIMENT_STATUS_SCHEMA,
        "goal_id": route.goal_id,
        "agent_id": route.agent_id,
        "status": route.status,
        "available": route.available,
        "experimental": True,
        "enabled": bool(binding and binding.enabled),
        "configured_for_agent": bool(binding and route.agent_id in (binding.agent_allowlist or [])),
        "config_pointer_registered": bool(binding and binding.config_path),
        "binding_revision": binding.revision if binding else None,
        **automation,
        "automation": automation,
        "automation_intent": dict(route.config.automation_intent) if route.available else None,
        "reason_code": route.reason_code,
        "config_schema_version": cfg.CONFIG_SCHEMA if route.config else None,
        "provider_id": route.config.provider_id if route.config else None,
        "corpus_count": len(route.config.corpus_ids) if route.config else 0,
        "surface_count": len(route.config.surfaces) if route.config else 0,
        "corpus_ids": sorted(route.config.corpus_ids) if route.config else [],
        "surface_ids": sorted(route.config.surfaces) if route.config else [],
        "recall_profile_ids": route.config.recall_profile_ids if route.config else [],
        "surface_profiles": [
            {
                "surface_id": s.surface_id,
                "adapter": s.adapter,
                "corpus_count": len(s.corpus_ids),
                "recall_profile_id": s.recall_profile["profile_id"],
            }
            for _, s in sorted((route.config.surfaces if route.config else {}).items())
        ],
        "config_runtime_route": {
            "schema_version": RUNTIME_ROUTE_SCHEMA,
            "registry_source": "invoked_registry",
            "registry_role": REGISTRY_ROLE,
            "runtime_scope": "project_runtime",
            "config_source": "goal_repo_relative_config_pointer",
            "readback_status": route.readback_status,
            "exact_readback_verified": route.available,
        },
        "enablement_receipt_status": (route.receipt or {}).get("status") if route.receipt else None,
        "writability_verified": route.available,
        "exact_readback_verified": route.available,
        "raw_content_captured": False,
        "external_writes_performed": False,
        "user_gate": False,
    }
    return payload


def configuration(
    status, goal_id, agent_id, provider, summary, *, committed=False, receipt=None, revision=None
):
    """``reward_memory_goal_configuration_v0``: the preview's provider preflight, or the
    execution's canary result (``provider``) with the committed binding."""
    preview = status == "preview"
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


def enablement_receipt(
    *, goal_id: str, agent_id: str, provider_id: str, config_digest: str, canaries, now
) -> dict[str, Any]:
    """``reward_memory_enablement_receipt_v0``: the verified canaries of one enablement;
    ``receipt_id`` is its digest."""
    receipt = {
        "schema_version": RECEIPT_SCHEMA,
        "status": "verified",
        "goal_id": goal_id,
        "agent_id": agent_id,
        "provider_id": provider_id,
        "config_digest": config_digest,
        "canary_ref_digests": [r.resource_ref_digest for _, r in canaries],
        "writability_verified": True,
        "exact_readback_verified": True,
        "recallable": False,
        "verified_at": clock.iso(now),
    }
    receipt["receipt_id"] = digest_ref(receipt)
    return receipt
