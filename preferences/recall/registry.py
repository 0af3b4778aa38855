"""Operator-registered hook configs (``SemanticPreferenceConfig``), used by the API.

A registered config is validated exactly like a file config when it is saved, and again
whenever it is used. The API names configs only this way — a client never supplies a path
or a command.
"""

from typing import Any

from django.db import IntegrityError, transaction

from loopx_site.core import clock
from loopx_site.core.canonical import digest_ref
from loopx_site.core.validation import IDENTIFIER_RE
from preferences.models import SemanticPreferenceConfig
from preferences.recall.config import require_project, validate_config
from preferences.recall.errors import SemanticPreferenceError, invalid


def config_payload(row: SemanticPreferenceConfig) -> dict[str, Any]:
    """Public projection: name, state and surface ids — never the provider object."""
    enabled = bool(isinstance(row.config, dict) and row.config.get("enabled"))
    surfaces = row.config.get("surfaces", {}) if isinstance(row.config, dict) else {}
    return {
        "name": row.name,
        "enabled": enabled,
        "surfaces": sorted(surfaces) if isinstance(surfaces, dict) else [],
        "config_digest": row.config_digest,
        "updated_at": clock.iso(row.updated_at),
    }


def register_config(
    *,
    name: str,
    project: str,
    config: dict[str, Any],
    description: str = "",
    execute: bool = False,
) -> dict[str, Any]:
    """Create or replace the registered config ``name`` (idempotent; preview by default)."""
    if not isinstance(name, str) or not IDENTIFIER_RE.fullmatch(name):
        raise invalid("invalid_argument", "name", f"name must match {IDENTIFIER_RE.pattern}.")
    project = require_project(project)
    validate_config(config, origin="registered")
    if not isinstance(description, str) or len(description) > 500:
        raise invalid("invalid_argument", "description", "description is at most 500 chars.")
    digest = digest_ref({"project": project, "config": config})
    values = {
        "project": project,
        "config": config,
        "config_digest": digest,
        "description": description,
    }
    if not execute:
        existing = SemanticPreferenceConfig.objects.filter(name=name).first()
        action = (
            "create"
            if existing is None
            else ("unchanged" if existing.config_digest == digest else "update")
        )
        now = clock.now()
        row = SemanticPreferenceConfig(name=name, created_at=now, updated_at=now, **values)
        return {
            "schema_version": "semantic_preference_config_registration_v0",
            "status": "preview",
            "action": action,
            "config": config_payload(row),
        }
    for _attempt in range(2):
        try:
            with transaction.atomic():
                row = SemanticPreferenceConfig.objects.select_for_update().filter(name=name).first()
                now = clock.now()
                if row is None:
                    with transaction.atomic():
                        row = SemanticPreferenceConfig.objects.create(
                            name=name, created_at=now, updated_at=now, **values
                        )
                    status = "created"
                elif row.config_digest == digest and row.description == description:
                    status = "unchanged"
                else:
                    for key, value in values.items():
                        setattr(row, key, value)
                    row.updated_at = now
                    row.save()
                    status = "updated"
            return {
                "schema_version": "semantic_preference_config_registration_v0",
                "status": status,
                "action": status,
                "config": config_payload(row),
            }
        except IntegrityError:
            continue
    raise SemanticPreferenceError(
        "operation_conflict", "Concurrent registrations did not settle.", status=409
    )


def unregister_config(*, name: str) -> None:
    SemanticPreferenceConfig.objects.filter(name=name).delete()
