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

from preferences.recall.hook import (
    Scope,
    config_for_cli,
    doctor,
    recall,
    registered_config,
    runnable_config,
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
from preferences.services.extension_doctor import doctor_extension
from preferences.services.extension_run import run_extension
from preferences.services.extensions import (
    activate_extension,
    deactivate_extension,
    install_extension,
    install_manifest,
    list_extensions,
    rollback_extension,
    upgrade_extension,
)

__all__ = [
    "Scope",
    "activate_extension",
    "application_receipt",
    "config_for_cli",
    "deactivate_extension",
    "delete_provider_note",
    "doctor",
    "doctor_extension",
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
    "run_extension",
    "runnable_config",
    "save_provider_note",
    "scope_of",
    "share_config",
    "unregister_config",
    "upgrade_extension",
]
