"""Documents of the semantic preference recall hook (``loopx_wire.md``): ``recall`` and
``doctor`` (LoopX's ``semantic_preference_recall_v0`` /
``semantic_preference_provider_doctor_v0``), the stateless receipts, config
registrations, and the built-in provider's notes and reindex runs.

The use cases (``preferences.recall.hook``, ``…receipts``, ``…registry``,
``…local_provider``) decide every field; these builders only frame them."""

from typing import Any

RECALL_SCHEMA = "semantic_preference_recall_v0"
DOCTOR_SCHEMA = "semantic_preference_provider_doctor_v0"
APPLICATION_SCHEMA = "semantic_preference_application_receipt_v0"
MAINTENANCE_SCHEMA = "semantic_preference_maintenance_receipt_v0"
HOOK_CONFIG_SCHEMA = "semantic_preference_hook_config_v0"
REGISTRATION_SCHEMA = "semantic_preference_config_registration_v0"
REINDEX_SCHEMA = "semantic_preference_local_reindex_v0"
NOTE_SCHEMA = "semantic_preference_provider_note_v0"


def _framed(schema: str, fields: dict[str, Any]) -> dict[str, Any]:
    return {"ok": True, "schema_version": schema, **fields}


def recall(result: dict[str, Any]) -> dict[str, Any]:
    """``semantic_preference_recall_v0`` from ``hook.recall``'s result (``status``,
    ``surface``, ``items``, ``truncated``, ``failure_kind``, …)."""
    return _framed(RECALL_SCHEMA, result)


def doctor(result: dict[str, Any]) -> dict[str, Any]:
    """``semantic_preference_provider_doctor_v0`` from ``hook.doctor``'s result."""
    return _framed(DOCTOR_SCHEMA, result)


def application_receipt(
    *,
    surface: str,
    application_id: str,
    outcome: str,
    artifact_ref: str | None,
    preference_ref_digests: list[str],
) -> dict[str, Any]:
    """Only what seed 000 allows a receipt to hold — the surface, the application id, the
    outcome, the ref digests and an optional artifact ref — in LoopX's key order."""
    return {
        "schema_version": APPLICATION_SCHEMA,
        "surface": surface,
        "application_id": application_id,
        "outcome": outcome,
        "preference_ref_digests": preference_ref_digests,
        "artifact_ref": artifact_ref,
    }


def maintenance_receipt(
    *,
    trigger: str,
    outcome: str,
    corpus_ids: list[str],
    evidence_ref: str | None,
    scope_ref_digests: list[str],
) -> dict[str, Any]:
    """The trigger, outcome, corpus ids, scope-ref digests and an optional evidence ref,
    in LoopX's key order."""
    return {
        "schema_version": MAINTENANCE_SCHEMA,
        "trigger": trigger,
        "outcome": outcome,
        "corpus_ids": corpus_ids,
        "scope_ref_digests": scope_ref_digests,
        "evidence_ref": evidence_ref,
    }


def registration(*, status: str, action: str, config: dict[str, Any]) -> dict[str, Any]:
    """``semantic_preference_config_registration_v0`` (register / share a config)."""
    return {
        "schema_version": REGISTRATION_SCHEMA,
        "status": status,
        "action": action,
        "config": config,
    }


def reindex(*, execute: bool, indexed: int, removed: int) -> dict[str, Any]:
    return {
        "schema_version": REINDEX_SCHEMA,
        "status": "reindexed" if execute else "preview",
        "indexed": indexed,
        "removed": removed,
    }


def provider_note(status: str, note: dict[str, Any]) -> dict[str, Any]:
    """``semantic_preference_provider_note_v0``: one note's public fields (no body)."""
    return {"schema_version": NOTE_SCHEMA, "status": status, **note}


def hook_config(
    *, provider: dict[str, Any], surfaces: dict[str, Any], enabled: bool = True
) -> dict[str, Any]:
    """A ``semantic_preference_hook_config_v0`` (the demo's registered config)."""
    return {
        "schema_version": HOOK_CONFIG_SCHEMA,
        "enabled": enabled,
        "provider": provider,
        "surfaces": surfaces,
    }
