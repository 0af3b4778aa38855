"""``recall`` and ``doctor``: the hook's use cases, shared by the CLI, the API and code.

Both take a config as a file path (git must ignore it), a registered
``SemanticPreferenceConfig`` (row or name via ``registered_config``), or an in-process
mapping. Without ``execute`` they resolve the config and the provider binding and stop —
the provider is never invoked. With ``execute`` the provider runs once through the bounded
runner; every failure becomes a bounded ``failure_kind`` and the surface's policy decides:
``fail_open`` → ``status: "provider_unavailable"`` with no items, ``fail_closed`` → the
``provider_failed`` error (exit 2 / 503). Nothing of the provider's command, stderr, exit
status or rejected output reaches a result or an error.
"""

import os
import tempfile
from typing import Any

from preferences.models import SemanticPreferenceConfig
from preferences.recall import protocol, runner
from preferences.recall.config import (
    HookConfig,
    load_config_file,
    require_project,
    require_surface_id,
    validate_config,
    validate_context,
)
from preferences.recall.errors import SemanticPreferenceError, invalid
from preferences.recall.extensions import Binding, BindingUnavailable, resolve_binding

RECALL_SCHEMA = "semantic_preference_recall_v0"
DOCTOR_SCHEMA = "semantic_preference_doctor_v0"
BINDING_UNAVAILABLE = "extension_binding_unavailable"

ConfigSource = str | os.PathLike | dict | HookConfig | SemanticPreferenceConfig


def registered_config(name: Any) -> SemanticPreferenceConfig:
    """The operator-registered config of that name (``config_not_found`` otherwise)."""
    if not isinstance(name, str) or not name:
        raise invalid("invalid_argument", "config", "config must be a registered config name.")
    row = SemanticPreferenceConfig.objects.filter(name=name).first()
    if row is None:
        raise invalid("config_not_found", "config", "No registered config has this name.")
    return row


def config_for_cli(value: str) -> str | SemanticPreferenceConfig:
    """``--config CFG``: an existing file path, else the name of a registered config.

    A file wins when both exist; a value that is neither is reported as a missing file
    (``config_not_found``) without echoing it.
    """
    if os.path.lexists(value):
        return value
    row = SemanticPreferenceConfig.objects.filter(name=value).first()
    return row if row is not None else value


def load_config(config: ConfigSource) -> HookConfig:
    if isinstance(config, HookConfig):
        return config
    if isinstance(config, SemanticPreferenceConfig):
        return validate_config(config.config, origin="registered")
    if isinstance(config, dict):
        return validate_config(config, origin="inline")
    if isinstance(config, str | os.PathLike):
        return load_config_file(config)
    raise invalid("invalid_config", "config", "config must be a path, a mapping or a config row.")


def _working_dir(binding: Binding, project: str) -> str:
    if binding.cwd is not None:
        return binding.cwd
    if os.path.isdir(project):
        return os.path.abspath(project)
    return tempfile.gettempdir()


def _bind(hook: HookConfig) -> tuple[Binding | None, str | None]:
    try:
        return resolve_binding(hook.provider), None
    except BindingUnavailable:
        return None, BINDING_UNAVAILABLE


def recall(
    config: ConfigSource,
    *,
    project: str,
    surface: str,
    execute: bool = False,
    context: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Recall ranked semantic preferences for one module-owned surface.

    Returns ``semantic_preference_recall_v0``; ``items`` is the private result for the
    caller (the only place recalled content appears).
    """
    project = require_project(project)
    require_surface_id(surface, "surface")
    context = validate_context(context)
    hook = load_config(config)
    result: dict[str, Any] = {
        "schema_version": RECALL_SCHEMA,
        "status": "disabled",
        "surface": surface,
        "failure_policy": None,
        "limit": None,
        "provider": None,
        "items": [],
        "truncated": False,
        "failure_kind": None,
    }
    if not hook.enabled:
        return result
    surface_config = hook.surface(surface)
    result["failure_policy"] = surface_config.failure_policy
    result["limit"] = surface_config.limit
    binding, failure = _bind(hook)
    if binding is not None:
        result["provider"] = binding.public()
    if failure is not None:
        return _degrade(result, failure)
    if not execute:
        result["status"] = "preview_ready"
        return result
    request = protocol.build_request(
        surface=surface,
        query=surface_config.query,
        limit=surface_config.limit,
        context=context,
        project=project,
    )
    run = runner.run(
        list(binding.argv),
        request=request,
        timeout_seconds=binding.timeout_seconds,
        env=runner.minimal_env(binding.env),
        cwd=_working_dir(binding, project),
    )
    if run.failure_kind is not None:
        return _degrade(result, run.failure_kind)
    try:
        parsed = protocol.parse_response(run.stdout, limit=surface_config.limit)
        guidance = protocol.maintenance_guidance(parsed.inventory) if parsed.inventory else None
    except protocol.ProtocolFailure as failure_:
        return _degrade(result, failure_.kind)
    result.update(status="completed", items=parsed.items, truncated=parsed.truncated)
    if guidance is not None:
        result["maintenance_guidance"] = guidance
    return result


def _degrade(result: dict[str, Any], failure_kind: str) -> dict[str, Any]:
    if result["failure_policy"] == "fail_closed":
        raise SemanticPreferenceError(
            "provider_failed",
            "The semantic preference provider failed and this surface is fail_closed.",
            field="surface",
            details={"surface": result["surface"], "failure_kind": failure_kind},
        )
    result.update(status="provider_unavailable", items=[], truncated=False)
    result["failure_kind"] = failure_kind
    return result


def doctor(config: ConfigSource, *, project: str, execute: bool = False) -> dict[str, Any]:
    """Check a config and its provider binding; with ``execute`` run the read-only probe
    (the manifest doctor, or the legacy ``probe_argv``). Never installs, starts or writes.
    """
    project = require_project(project)
    hook = load_config(config)
    result: dict[str, Any] = {
        "schema_version": DOCTOR_SCHEMA,
        "status": "disabled",
        "config": {"valid": True, "enabled": hook.enabled, "surfaces": sorted(hook.surfaces)},
        "provider": None,
        "failure_kind": None,
        "setup_hints": [],
    }
    if not hook.enabled:
        return result
    hints = list(hook.provider.setup_hints) if hook.provider else []
    binding, failure = _bind(hook)
    if failure is not None:
        result.update(status="unavailable", failure_kind=failure, setup_hints=hints)
        return result
    result["provider"] = binding.public()
    hints += [h for h in binding.setup_hints if h not in hints]
    if binding.doctor_argv is None:
        result.update(status="no_probe", setup_hints=hints)
        return result
    if not execute:
        result["status"] = "preview_ready"
        return result
    run = runner.run(
        list(binding.doctor_argv),
        request=protocol.build_doctor_request(project=project),
        timeout_seconds=binding.timeout_seconds,
        env=runner.minimal_env(binding.env),
        cwd=_working_dir(binding, project),
    )
    if run.failure_kind is not None:
        result.update(status="unhealthy", failure_kind=run.failure_kind, setup_hints=hints)
        return result
    result["status"] = "healthy"
    return result
