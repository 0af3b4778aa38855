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
import shutil
from dataclasses import dataclass
from typing import Any

from django.db.models import Q

from loopx_site.core import sandbox as runner
from loopx_site.core import tracing
from preferences.models import SemanticPreferenceConfig
from preferences.recall import protocol
from preferences.recall.binding import (
    BINDING_UNAVAILABLE,
    Binding,
    BindingUnavailable,
    resolve_binding,
)
from preferences.recall.config import (
    HookConfig,
    load_config_file,
    require_project,
    require_surface_id,
    validate_config,
    validate_context,
)
from preferences.recall.errors import SemanticPreferenceError, invalid
from preferences.recall.observed import observed

#: LoopX's doctor flags: the doctor never sets anything up or writes anywhere.
DOCTOR_FLAGS = {
    "automatic_setup_performed": False,
    "credential_writes_performed": False,
    "service_writes_performed": False,
    "external_writes_performed": False,
}
PROBE_FAILURE = {"nonzero_exit": "probe_nonzero_exit"}
MISSING_CONFIG = "No registered config has this name."

ConfigSource = str | os.PathLike | dict | HookConfig | SemanticPreferenceConfig


@dataclass(frozen=True)
class Scope:
    """The server-verified scope a provider run is for (never read from a request body)."""

    goal_id: str | None = None
    agent_id: str | None = None

    def env(self, project: str) -> dict[str, str]:
        values = {"LOOPX_RECALL_PROJECT": project}
        if self.goal_id:
            values["LOOPX_RECALL_GOAL_ID"] = self.goal_id
        if self.agent_id:
            values["LOOPX_RECALL_AGENT_ID"] = self.agent_id
        return values


def registered_config(name: Any, *, goal_id: str | None = None, operator: bool = True):
    """The registered config of that name the caller may run (``config_not_found``).

    An operator may run every config; a host (``operator=False``) only its Goal's configs
    and those shared with its Goal — any other config is reported exactly like a missing
    one.
    """
    if not isinstance(name, str) or not name:
        raise invalid("invalid_argument", "config", "config must be a registered config name.")
    rows = SemanticPreferenceConfig.objects.filter(name=name)
    if not operator:
        if not goal_id:
            rows = rows.none()
        else:
            rows = rows.filter(
                Q(goal__goal_id=goal_id) | Q(shared_with__goal_id=goal_id)
            ).distinct()
    row = rows.select_related("goal").first()
    if row is None:
        raise invalid("config_not_found", "config", MISSING_CONFIG)
    return row


def scope_of(row: SemanticPreferenceConfig) -> Scope:
    """The scope of an operator's run of a registered config: its owner Goal."""
    return Scope(goal_id=row.goal.goal_id if row.goal_id else None)


def runnable_config(caller, name: Any) -> tuple[SemanticPreferenceConfig, Scope]:
    """The registered config ``caller`` (an ``access.Caller``) may run, and the verified
    scope of the run: an operator runs any config on its owner Goal; a host token only
    its Goal's (or shared) configs, on the token's own Goal and Agent — never a scope
    named by the request."""
    if caller.is_operator:
        row = registered_config(name)
        return row, scope_of(row)
    row = registered_config(name, goal_id=caller.goal_id, operator=False)
    return row, Scope(goal_id=caller.goal_id, agent_id=caller.agent_id)


def config_for_cli(value: str) -> str | SemanticPreferenceConfig:
    """``--config CFG``: an existing file path, else the name of a registered config.

    A file wins when both exist; a value that is neither is reported as a missing file
    (``config_not_found``) without echoing it.
    """
    if os.path.lexists(value):
        return value
    row = SemanticPreferenceConfig.objects.filter(name=value).select_related("goal").first()
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
    raise invalid("config_invalid", "config", "config must be a path, a mapping or a config row.")


def _bind(hook: HookConfig) -> tuple[Binding | None, str | None]:
    try:
        return resolve_binding(hook.provider), None
    except BindingUnavailable:
        return None, BINDING_UNAVAILABLE


def _doctor_binding(hook: HookConfig) -> tuple[Binding | None, str | None]:
    """The doctor's view of the binding, as LoopX reports it: a config naming an
    extension that is not installed is an error; one naming a disabled extension is
    ``disabled`` (``failure`` ``"disabled"``)."""
    try:
        return resolve_binding(hook.provider), None
    except BindingUnavailable as unavailable:
        if unavailable.reason == "not_installed":
            raise SemanticPreferenceError(
                "extension_not_found",
                f"extension `{hook.provider.extension_id}` is not installed",
                field="provider.extension_id",
            ) from None
        return None, "disabled" if unavailable.reason == "disabled" else BINDING_UNAVAILABLE


def _env(binding: Binding, project: str, scope: Scope | None) -> dict[str, str]:
    extra = dict(binding.env)
    if binding.builtin:
        extra.update((scope or Scope()).env(project))
    return runner.minimal_env(extra)


@observed
def recall(
    config: ConfigSource,
    *,
    project: str,
    surface: str,
    execute: bool = False,
    context: dict[str, str] | None = None,
    scope: Scope | None = None,
) -> dict[str, Any]:
    """Recall ranked semantic preferences for one module-owned surface.

    Returns the result ``documents.recall`` renders as LoopX's
    ``semantic_preference_recall_v0``; ``items`` is the private result for the caller
    (the only place recalled content appears). ``scope`` is the
    verified Goal/Agent handed to the built-in provider.
    """
    project = require_project(project)
    require_surface_id(surface, "surface")
    context = validate_context(context)
    hook = load_config(config)
    result: dict[str, Any] = {
        "status": "disabled",
        "surface": surface,
        "items": [],
        "truncated": False,
        "failure_kind": None,
        "failure_policy": None,
        "limit": None,
        "provider": None,
    }
    if not hook.enabled:
        return result
    surface_config = hook.surface(surface)
    result["failure_policy"] = surface_config.failure_policy
    result["limit"] = surface_config.limit
    request = protocol.request_document(
        surface=surface, query=surface_config.query, limit=surface_config.limit, context=context
    )
    # As LoopX: a preview bound to an extension that is not installed is a bad request
    # (exit 2); an executed recall degrades by the surface's failure policy.
    binding, failure = _doctor_binding(hook) if not execute else _bind(hook)
    if failure == "disabled":
        failure = BINDING_UNAVAILABLE
    if binding is not None:
        result["provider"] = binding.public()
    if failure is not None:
        return _degrade(result, failure)
    if not execute:
        result.update(status="preview_ready", request=request)
        return result
    with tracing.span("preferences.provider.recall", provider=binding.provider_id):
        run = runner.run(
            list(binding.argv),
            request=protocol.encode_request(request),
            timeout_seconds=binding.timeout_seconds,
            env=_env(binding, project, scope),
            as_server=binding.builtin,  # the server's own provider reads its database
        )
    if run.failure_kind is not None:
        return _degrade(result, run.failure_kind)
    try:
        parsed = protocol.parse_response(run.stdout, limit=surface_config.limit)
    except protocol.ProtocolFailure as failure_:
        return _degrade(result, failure_.kind)
    result.update(
        status="completed",
        items=parsed.items,
        truncated=parsed.truncated,
        corpus_inventory=parsed.inventory,
        maintenance_guidance=protocol.maintenance_guidance(parsed.inventory),
    )
    return result


def _degrade(result: dict[str, Any], failure_kind: str) -> dict[str, Any]:
    if result["failure_policy"] == "fail_closed":
        error = SemanticPreferenceError(
            "provider_failed",
            f"semantic preference provider unavailable: {failure_kind}",
            field="surface",
            details={"surface": result["surface"], "failure_kind": failure_kind},
        )
        error.extra = {"failure_kind": failure_kind}
        raise error
    result.update(status="provider_unavailable", items=[], truncated=False)
    result["failure_kind"] = failure_kind
    return result


def _program_available(program: str) -> bool:
    if os.path.isabs(program):
        return os.path.isfile(program) and os.access(program, os.X_OK)
    return shutil.which(program, path=runner.minimal_env()["PATH"]) is not None


def doctor(
    config: ConfigSource, *, project: str, execute: bool = False, scope: Scope | None = None
) -> dict[str, Any]:
    """The doctor's result for a config (``documents.doctor`` renders LoopX's
    ``semantic_preference_provider_doctor_v0``).

    Without ``execute`` nothing runs (``probe_required`` when a probe is configured); with
    it, the read-only probe (the manifest doctor, or the legacy ``probe_argv``) runs once
    through the bounded runner. Never installs, configures, starts or writes anything.
    """
    project = require_project(project)
    hook = load_config(config)
    result: dict[str, Any] = {
        "status": "disabled",
        "provider_id": None,
        "available": False,
        "verified": False,
        "probe_configured": False,
        "failure_kind": None,
        "setup_hints": {},
        **DOCTOR_FLAGS,
        "config": {"valid": True, "enabled": hook.enabled, "surfaces": sorted(hook.surfaces)},
        "provider": None,
    }
    if not hook.enabled:
        return result
    result["provider_id"] = hook.provider.id or "configured_provider"
    result["setup_hints"] = dict(hook.provider.setup_hints)
    binding, failure = _doctor_binding(hook)
    if failure == "disabled":
        result.update(status="disabled", failure_kind=None)
        result["probe_configured"] = True
        return result
    if failure is not None:
        result.update(status="provider_unavailable", failure_kind=failure)
        result["probe_configured"] = not hook.provider.is_legacy
        return result
    result["provider"] = binding.public()
    result["setup_hints"] = dict(binding.setup_hints)
    probe = binding.doctor_argv
    result["probe_configured"] = probe is not None
    if not _program_available(binding.argv[0]):
        result.update(status="provider_missing", failure_kind=None)
        return result
    result["available"] = True
    if probe is None:
        result["status"] = "ready"
        return result
    if not execute:
        result["status"] = "probe_required"
        return result
    run = runner.run(
        list(probe),
        request=b"",
        timeout_seconds=binding.timeout_seconds,
        env=_env(binding, project, scope),
        as_server=binding.builtin,  # the server's own provider reads its database
    )
    if run.failure_kind is not None:
        result.update(
            status="provider_unavailable",
            available=False,
            failure_kind=PROBE_FAILURE.get(run.failure_kind, "probe_execution_failed"),
        )
        return result
    result.update(status="ready", verified=True)
    return result
