"""The semantic preference recall hook (Part B): config, providers, receipts.

The use cases live in ``preferences.recall`` (one module per concern); this module is
the hook's public service surface, star-imported by ``preferences.services``::

    from preferences import services

    result = services.recall(config_path, project="loopx-demo",
                             surface="issue_fix.pr_description", execute=True)
    guidance = result.get("maintenance_guidance")
    receipt = services.application_receipt(
        surface="issue_fix.pr_description", application_id="pr-123-description-v2",
        outcome="applied", preference_refs=[i["preference_ref"] for i in result["items"]])
"""

from loopx_site.core import access
from preferences.recall.errors import SemanticPreferenceError
from preferences.recall.extensions import (
    install_manifest,
    list_extensions,
    read_manifest_file,
    rollback,
    set_active,
)
from preferences.recall.hook import (
    Scope,
    config_for_cli,
    doctor,
    recall,
    registered_config,
    scope_of,
)
from preferences.recall.local_provider import (
    delete_provider_note,
    reindex_project,
    retire_provider_note,
    save_provider_note,
)
from preferences.recall.receipts import application_receipt, maintenance_receipt
from preferences.recall.registry import register_config, share_config, unregister_config

__all__ = [
    "Scope",
    "activate_extension",
    "application_receipt",
    "config_for_cli",
    "deactivate_extension",
    "delete_provider_note",
    "doctor",
    "install_extension",
    "install_manifest",
    "list_extensions",
    "maintenance_receipt",
    "recall",
    "register_config",
    "registered_config",
    "reindex_project",
    "retire_provider_note",
    "rollback_extension",
    "save_provider_note",
    "scope_of",
    "share_config",
    "unregister_config",
    "upgrade_extension",
]


def install_extension(*, manifest_path, execute: bool = False) -> dict:
    """``extension install --manifest FILE [--execute]``: validate, then install enabled."""
    return install_manifest(read_manifest_file(manifest_path), execute=execute)


def upgrade_extension(*, manifest_path, execute: bool = False) -> dict:
    """``extension upgrade --manifest FILE [--execute]``: a new revision of an installed id."""
    return install_manifest(read_manifest_file(manifest_path), execute=execute, operation="upgrade")


def activate_extension(*, extension_id: str, execute: bool = False) -> dict:
    """``extension enable|activate ID [--execute]``."""
    return set_active(extension_id, active=True, execute=execute)


def deactivate_extension(
    *, extension_id: str, operator: access.Operator, execute: bool = False
) -> dict:
    """``extension disable|deactivate ID [--execute]`` (the operator's shell) or the admin
    action (an account holding ``preferences.change_providerextension``)."""
    access.require_operator_permission(
        operator, "preferences.change_providerextension", error=SemanticPreferenceError
    )
    return set_active(extension_id, active=False, execute=execute)


def rollback_extension(*, extension_id: str, execute: bool = False) -> dict:
    """``extension rollback ID [--execute]``."""
    return rollback(extension_id, execute=execute)
