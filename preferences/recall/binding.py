"""Provider selection: which provider a config binds to and how it runs (reads only).

Selection (``resolve_binding``):

* ``argv`` in a file config → the legacy provider (``timeout_seconds``, ``probe_argv``);
* ``extension_id`` → that extension; missing, disabled or not a ``semantic-preference``
  implementation → ``extension_binding_unavailable`` (the surface's failure policy);
* neither → the unique enabled implementation; none → ``extension_binding_unavailable``;
  several → ``provider_ambiguous``.

The project's own entrypoint ``["python", "manage.py", …]`` becomes this interpreter
running this project's ``manage.py``; only it may hold ``project_database_read`` and
receive the settings module, ``PYTHONPATH``, ``DATABASE_URL`` and the verified scope. A
config may append only ``--project VALUE`` to it (never ``--settings``/``--pythonpath``).
"""

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.db import connection

from preferences.models import ProviderExtension
from preferences.recall import config as config_module
from preferences.recall.config import ProviderConfig
from preferences.recall.errors import SemanticPreferenceError, invalid
from preferences.recall.manifest import (
    CAPABILITY,
    Manifest,
    is_project_entrypoint,
    manifest_of,
    validate_manifest,
)
from preferences.recall.protocol import PROTOCOL

STATE_SCHEMA = "semantic_preference_extension_state_v0"
BINDING_UNAVAILABLE = "extension_binding_unavailable"
#: Scope variables handed to the project's own provider (never taken from a request).
SCOPE_ENV = ("LOOPX_RECALL_GOAL_ID", "LOOPX_RECALL_AGENT_ID", "LOOPX_RECALL_PROJECT")


@dataclass(frozen=True)
class InstalledExtension:
    manifest: Manifest
    active: bool


class BindingUnavailable(Exception):
    """No usable provider binding; reported as ``extension_binding_unavailable``.

    ``reason``: ``disabled`` when the named extension is installed but disabled,
    ``not_installed`` when no installed extension has the named id, else ``none``."""

    def __init__(self, reason: str = "none"):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Binding:
    """A resolved provider: how to run it (private) and how to name it (public)."""

    source: str  # "extension" | "argv"
    provider_id: str | None
    extension_id: str | None
    argv: tuple[str, ...]
    doctor_argv: tuple[str, ...] | None
    timeout_seconds: int
    env: dict[str, str] = field(default_factory=dict, repr=False)
    builtin: bool = False
    setup_hints: dict[str, str] = field(default_factory=dict)

    def public(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "provider_id": self.provider_id,
            "extension_id": self.extension_id,
            "timeout_seconds": self.timeout_seconds,
            "doctor": self.doctor_argv is not None,
        }


def _installed_from_db() -> list[InstalledExtension]:
    return [
        InstalledExtension(manifest=manifest_of(r), active=r.active)
        for r in ProviderExtension.objects.order_by("extension_id")
    ]


def _installed_from_state_file(path: Path) -> list[InstalledExtension]:
    """A local-private state file named by a CLI config file (never by the API)."""
    if not path.is_file():
        raise BindingUnavailable
    raw = config_module.read_private_json(
        path,
        what="extension_state_file",
        not_found_code="config_invalid",
        invalid_code="config_invalid",
    )
    if (
        not isinstance(raw, dict)
        or set(raw) != {"schema_version", "extensions"}
        or raw["schema_version"] != STATE_SCHEMA
        or not isinstance(raw["extensions"], list)
    ):
        raise invalid(
            "config_invalid",
            "provider.extension_state_file",
            f"The extension state file must be a {STATE_SCHEMA} object.",
        )
    out = []
    for entry in raw["extensions"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("active"), bool):
            raise invalid(
                "config_invalid",
                "provider.extension_state_file",
                "Each state entry is a manifest plus a boolean active flag.",
            )
        body = {k: v for k, v in entry.items() if k != "active"}
        try:
            manifest = validate_manifest(body, base_dir=path.parent)
        except SemanticPreferenceError:
            raise invalid(
                "config_invalid",
                "provider.extension_state_file",
                "An entry of the extension state file is not a valid manifest.",
            ) from None
        out.append(InstalledExtension(manifest=manifest, active=entry["active"]))
    return out


def _builtin_args(args: tuple[str, ...]) -> tuple[str, ...]:
    """Config args allowed after the project's own entrypoint: ``--project VALUE`` only."""
    if not args:
        return args
    if len(args) == 2 and args[0] == "--project" and not args[1].startswith("-"):
        return args
    raise invalid(
        "config_invalid",
        "provider.args",
        "The built-in provider accepts only `--project VALUE` as provider.args.",
    )


def resolve_binding(provider: ProviderConfig) -> Binding:
    """Select the provider a config binds to (see the module docstring)."""
    if provider.is_legacy:
        return Binding(
            source="argv",
            provider_id=provider.id,
            extension_id=None,
            argv=provider.argv,
            doctor_argv=provider.probe_argv,
            timeout_seconds=provider.timeout_seconds,
            setup_hints=dict(provider.setup_hints),
        )
    if provider.extension_state_file is not None:
        installed = _installed_from_state_file(provider.extension_state_file)
    else:
        installed = _installed_from_db()
    candidates = [
        e
        for e in installed
        if e.active and e.manifest.capability == CAPABILITY and e.manifest.protocol == PROTOCOL
    ]
    if provider.extension_id is not None:
        candidates = [e for e in candidates if e.manifest.extension_id == provider.extension_id]
        if not candidates:
            named = [e for e in installed if e.manifest.extension_id == provider.extension_id]
            raise BindingUnavailable("disabled" if named else "not_installed")
    if not candidates:
        raise BindingUnavailable
    if len(candidates) > 1:
        raise SemanticPreferenceError(
            "provider_ambiguous",
            "Several active semantic-preference provider extensions are installed; name one "
            "with provider.extension_id or deactivate the others.",
            field="provider.extension_id",
            details={"extension_ids": sorted(e.manifest.extension_id for e in candidates)},
        )
    manifest = candidates[0].manifest
    builtin = manifest.permission == "project_database_read"
    args = _builtin_args(provider.args) if builtin else provider.args
    argv, env = runtime_command(manifest.entrypoint, permission=manifest.permission)
    doctor = None
    if manifest.doctor is not None:
        doctor, _ = runtime_command(manifest.doctor, permission=manifest.permission)
        doctor = (*doctor, *args)
    hints = {**manifest.setup_hints, **provider.setup_hints}
    return Binding(
        source="extension",
        provider_id=provider.id,
        extension_id=manifest.extension_id,
        argv=(*argv, *args),
        doctor_argv=doctor,
        timeout_seconds=manifest.timeout_seconds,
        env=env,
        builtin=builtin,
        setup_hints=hints,
    )


def runtime_command(
    argv: tuple[str, ...], *, permission: str
) -> tuple[tuple[str, ...], dict[str, str]]:
    """(argv, extra environment) to run a manifest entrypoint."""
    if not is_project_entrypoint(argv):
        return argv, {}
    base = Path(settings.BASE_DIR)
    resolved = (sys.executable, str(base / "manage.py"), *argv[2:])
    env: dict[str, str] = {}
    if permission == "project_database_read":
        env = {
            "DJANGO_SETTINGS_MODULE": os.environ.get(
                "DJANGO_SETTINGS_MODULE", "loopx_site.settings"
            ),
            "PYTHONPATH": str(base),
            "DATABASE_URL": database_url(),
            "LOOPX_RUNTIME_ID": settings.LOOPX_RUNTIME_ID,
        }
    return resolved, env


def database_url() -> str:
    """A ``DATABASE_URL`` that reaches the database this process is connected to."""
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    auth = quote(s.get("USER") or "", safe="")
    if s.get("PASSWORD"):
        auth += ":" + quote(s["PASSWORD"], safe="")
    host = s.get("HOST") or "127.0.0.1"
    if host.startswith("/"):
        host = quote(host, safe="")  # a socket directory
    port = s.get("PORT") or "5432"
    return f"postgres://{auth}@{host}:{port}/{quote(str(s['NAME']), safe='')}"
