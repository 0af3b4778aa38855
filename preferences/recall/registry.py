"""Operator-registered hook configs (``SemanticPreferenceConfig``), used by the API.

A registered config is validated when it is saved and again whenever it is used, with the
registered-origin rule: its provider only names an installed extension by
``extension_id`` (no argv, args, probe, timeout or state file). A row saved before that
rule, or edited around it, is refused at load (``config_invalid``) — it is not rewritten.

Ownership: a config belongs to one Goal (``goal``); an operator may share it with other
Goals. A host token runs only configs of its own Goal or shared with it
(``hook.registered_config``). The API names configs only this way — a client never
supplies a path or a command.
"""

from typing import Any

from django.db import IntegrityError, transaction

from loopx_site.core import clock
from loopx_site.core.canonical import digest_ref
from loopx_site.core.models import Goal
from loopx_site.core.validation import IDENTIFIER_RE
from preferences.models import ProviderExtension, SemanticPreferenceConfig
from preferences.recall.config import require_project, validate_config
from preferences.recall.errors import SemanticPreferenceError, invalid


def validate_registered(config: Any) -> None:
    """The rules of a registered config: the registered-origin shape, and an enabled one
    names an extension that is installed and enabled (``config_invalid`` otherwise)."""
    hook = validate_config(config, origin="registered")
    if not hook.enabled or hook.provider is None:
        return
    installed = ProviderExtension.objects.filter(
        extension_id=hook.provider.extension_id, active=True
    ).exists()
    if not installed:
        raise invalid(
            "config_invalid",
            "provider.extension_id",
            "No installed, enabled extension has this id; install it first with "
            "`manage.py semantic_preference extension install --manifest FILE --execute`.",
        )


def config_payload(row: SemanticPreferenceConfig) -> dict[str, Any]:
    """Public projection: name, state and surface ids — never the provider object."""
    enabled = bool(isinstance(row.config, dict) and row.config.get("enabled"))
    surfaces = row.config.get("surfaces", {}) if isinstance(row.config, dict) else {}
    shared = sorted(row.shared_with.values_list("goal_id", flat=True)) if row.pk else []
    return {
        "name": row.name,
        "goal_id": row.goal.goal_id if row.goal_id else None,
        "shared_with": shared,
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
    goal_id: str | None = None,
    description: str = "",
    execute: bool = False,
) -> dict[str, Any]:
    """Create or replace the registered config ``name`` owned by Goal ``goal_id``
    (idempotent; preview by default). ``goal_id=None`` keeps it to operators."""
    if not isinstance(name, str) or not IDENTIFIER_RE.fullmatch(name):
        raise invalid("invalid_argument", "name", f"name must match {IDENTIFIER_RE.pattern}.")
    project = require_project(project)
    validate_registered(config)
    if not isinstance(description, str) or len(description) > 500:
        raise invalid("invalid_argument", "description", "description is at most 500 chars.")
    goal = _goal(goal_id)
    digest = digest_ref({"project": project, "config": config, "goal": goal_id})
    values = {
        "goal": goal,
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
        return {"status": "preview", "action": action, "config": config_payload(row)}
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
                else:  # the row is locked: one UPDATE, then the stored values
                    SemanticPreferenceConfig.objects.filter(pk=row.pk).update(
                        updated_at=now, **values
                    )
                    row.refresh_from_db()
                    status = "updated"
            return {"status": status, "action": status, "config": config_payload(row)}
        except IntegrityError:
            continue
    raise SemanticPreferenceError("operation_conflict", "Concurrent registrations did not settle.")


def _goal(goal_id: str | None) -> Goal | None:
    if goal_id is None:
        return None
    goal = Goal.objects.filter(goal_id=goal_id).first() if isinstance(goal_id, str) else None
    if goal is None:
        raise invalid("invalid_argument", "goal_id", "No registered Goal has this id.")
    return goal


def share_config(*, name: str, goal_ids: list[str], execute: bool = False) -> dict[str, Any]:
    """Set the Goals (besides the owner) whose host tokens may run config ``name``."""
    row = SemanticPreferenceConfig.objects.filter(name=name).first()
    if row is None:
        raise invalid("config_not_found", "config", "No registered config has this name.")
    goals = [_goal(g) for g in sorted(set(goal_ids))]
    if execute:
        with transaction.atomic():
            row.shared_with.set(goals)
    payload = config_payload(row)
    if not execute:
        payload["shared_with"] = [g.goal_id for g in goals]
    return {"status": "shared" if execute else "preview", "action": "share", "config": payload}


def unregister_config(*, name: str) -> None:
    SemanticPreferenceConfig.objects.filter(name=name).delete()
