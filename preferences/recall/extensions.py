"""Provider extensions: manifests, installed runtime state, activation and selection.

A manifest owns the entrypoint, protocol, permission, timeout and doctor of a provider;
a config may only append ``args`` to the entrypoint and name an ``extension_id``. The
runtime state of installed extensions is the ``ProviderExtension`` table (or, for tests
and specialised embeddings, a local-private ``extension_state_file``).

Selection (``resolve_binding``):

* ``argv`` in the config → the legacy provider (``timeout_seconds``, ``probe_argv``);
* ``extension_id`` → that extension; missing, inactive or not a
  ``semantic-preference``/``semantic_preference_provider_v0`` implementation →
  ``extension_binding_unavailable`` (the surface's failure policy applies);
* neither → the unique active implementation; none → ``extension_binding_unavailable``;
  several → ``provider_ambiguous`` (an error: the operator must disambiguate).

A config's ``args`` are appended to the manifest entrypoint and to the manifest doctor
alike, so both check the same binding.

Entrypoints. ``["python", "manage.py", …]`` is the project's own form: at run time it
becomes this interpreter running this project's ``manage.py`` in the project directory,
and — only with the ``project_database_read`` permission, which only this form may hold —
the child gets the settings module, ``PYTHONPATH`` and ``DATABASE_URL`` it needs to reach
the project database. Any other program gets ``PATH`` and ``LANG`` only. Arguments
beginning with ``./`` or ``../`` are resolved against the manifest's directory at install.
"""

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.db import IntegrityError, connection, transaction

from loopx_site.core import clock
from loopx_site.core.canonical import digest_ref
from preferences.models import ProviderExtension
from preferences.recall import config as config_module
from preferences.recall.config import ProviderConfig, require_argv
from preferences.recall.errors import SemanticPreferenceError, invalid
from preferences.recall.protocol import PROTOCOL

MANIFEST_SCHEMA = "loopx_provider_extension_manifest_v0"
STATE_SCHEMA = "semantic_preference_extension_state_v0"
CAPABILITY = "semantic-preference"
PERMISSIONS = {
    "provider_private": "The provider reads only its own storage; it gets PATH and LANG.",
    "project_database_read": (
        "The project's own `python manage.py …` entrypoint reads the project database; "
        "it also gets the settings module, PYTHONPATH and DATABASE_URL."
    ),
}
MANIFEST_FIELDS = {
    "schema_version",
    "extension_id",
    "version",
    "description",
    "capability",
    "protocol",
    "entrypoint",
    "doctor",
    "permission",
    "timeout_seconds",
    "setup_hints",
}
REQUIRED_MANIFEST_FIELDS = {
    "schema_version",
    "extension_id",
    "capability",
    "protocol",
    "entrypoint",
    "permission",
    "timeout_seconds",
}
MAX_MANIFEST_BYTES = 64 * 1024
BINDING_UNAVAILABLE = "extension_binding_unavailable"


@dataclass(frozen=True)
class Manifest:
    extension_id: str
    capability: str
    protocol: str
    entrypoint: tuple[str, ...]
    doctor: tuple[str, ...] | None
    permission: str
    timeout_seconds: int
    version: str = ""
    description: str = ""
    setup_hints: tuple[str, ...] = ()

    def as_document(self) -> dict[str, Any]:
        return {
            "schema_version": MANIFEST_SCHEMA,
            "extension_id": self.extension_id,
            "version": self.version,
            "description": self.description,
            "capability": self.capability,
            "protocol": self.protocol,
            "entrypoint": list(self.entrypoint),
            "doctor": list(self.doctor) if self.doctor is not None else None,
            "permission": self.permission,
            "timeout_seconds": self.timeout_seconds,
            "setup_hints": list(self.setup_hints),
        }

    @property
    def digest(self) -> str:
        return digest_ref(self.as_document())


@dataclass(frozen=True)
class InstalledExtension:
    manifest: Manifest
    active: bool


class BindingUnavailable(Exception):
    """No usable provider binding; reported as ``extension_binding_unavailable``."""


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
    cwd: str | None = None
    setup_hints: tuple[str, ...] = ()

    def public(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "provider_id": self.provider_id,
            "extension_id": self.extension_id,
            "timeout_seconds": self.timeout_seconds,
            "doctor": self.doctor_argv is not None,
        }


# -- manifests ------------------------------------------------------------------------


def is_project_entrypoint(argv: tuple[str, ...] | list[str]) -> bool:
    return len(argv) >= 2 and argv[0] == "python" and argv[1] == "manage.py"


def _resolve_relative(argv: tuple[str, ...], base_dir: Path | None) -> tuple[str, ...]:
    if base_dir is None or is_project_entrypoint(argv):
        return argv
    return tuple(str((base_dir / a).resolve()) if a.startswith(("./", "../")) else a for a in argv)


def validate_manifest(raw: Any, *, base_dir: Path | None = None) -> Manifest:
    """Validate a ``loopx_provider_extension_manifest_v0`` object (``invalid_manifest``)."""
    if not isinstance(raw, dict):
        raise invalid("invalid_manifest", None, "The manifest must be a JSON object.")
    unknown = sorted(str(k)[:64] for k in raw if k not in MANIFEST_FIELDS)
    if unknown:
        raise invalid(
            "invalid_manifest", unknown[0], f"Unknown manifest field {unknown[0]}.", unknown=unknown
        )
    missing = sorted(REQUIRED_MANIFEST_FIELDS - set(raw))
    if missing:
        raise invalid("invalid_manifest", missing[0], f"The manifest needs {missing[0]}.")
    if raw["schema_version"] != MANIFEST_SCHEMA:
        raise invalid(
            "invalid_manifest", "schema_version", f"schema_version must be {MANIFEST_SCHEMA}."
        )
    extension_id = raw["extension_id"]
    if not isinstance(extension_id, str) or not config_module.PROVIDER_ID_RE.fullmatch(
        extension_id
    ):
        raise invalid(
            "invalid_manifest",
            "extension_id",
            f"extension_id must match {config_module.PROVIDER_ID_RE.pattern}.",
        )
    if raw["capability"] != CAPABILITY:
        raise invalid(
            "invalid_manifest", "capability", f"This runtime installs {CAPABILITY} providers."
        )
    if raw["protocol"] != PROTOCOL:
        raise invalid("invalid_manifest", "protocol", f"protocol must be {PROTOCOL}.")
    entrypoint = require_argv(raw["entrypoint"], "entrypoint", code="invalid_manifest")
    doctor = None
    if raw.get("doctor") is not None:
        doctor = require_argv(raw["doctor"], "doctor", code="invalid_manifest")
    permission = raw["permission"]
    if permission not in PERMISSIONS:
        raise invalid(
            "invalid_manifest",
            "permission",
            "permission must be one of: " + ", ".join(sorted(PERMISSIONS)) + ".",
        )
    if permission == "project_database_read" and not (
        is_project_entrypoint(entrypoint) and (doctor is None or is_project_entrypoint(doctor))
    ):
        raise invalid(
            "invalid_manifest",
            "permission",
            "project_database_read is reserved to the project's `python manage.py …` entrypoint.",
        )
    timeout = raw["timeout_seconds"]
    if isinstance(timeout, bool) or not isinstance(timeout, int) or not 1 <= timeout <= 120:
        raise invalid(
            "invalid_manifest", "timeout_seconds", "timeout_seconds must be an integer 1-120."
        )
    texts = {}
    for name, limit in (("version", 64), ("description", 500)):
        value = raw.get(name, "")
        if not isinstance(value, str) or len(value) > limit or "\x00" in value:
            raise invalid("invalid_manifest", name, f"{name} must be a string of ≤ {limit} chars.")
        texts[name] = value
    hints = raw.get("setup_hints", [])
    if (
        not isinstance(hints, list)
        or len(hints) > config_module.MAX_SETUP_HINTS
        or not all(
            isinstance(h, str) and 1 <= len(h) <= config_module.MAX_SETUP_HINT_CHARS for h in hints
        )
    ):
        raise invalid("invalid_manifest", "setup_hints", "setup_hints must be short strings.")
    return Manifest(
        extension_id=extension_id,
        capability=CAPABILITY,
        protocol=PROTOCOL,
        entrypoint=_resolve_relative(entrypoint, base_dir),
        doctor=_resolve_relative(doctor, base_dir) if doctor is not None else None,
        permission=permission,
        timeout_seconds=timeout,
        version=texts["version"],
        description=texts["description"],
        setup_hints=tuple(hints),
    )


def read_manifest_file(path: str | os.PathLike) -> Manifest:
    """Read and validate a manifest file (bounded; errors never name the path)."""
    absolute = Path(os.path.abspath(path))
    try:
        with absolute.open("rb") as handle:
            data = handle.read(MAX_MANIFEST_BYTES + 1)
    except OSError:
        raise invalid("not_found", "manifest", "The manifest file cannot be read.") from None
    if len(data) > MAX_MANIFEST_BYTES:
        raise invalid("invalid_manifest", "manifest", "The manifest exceeds 64 KiB.")
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise invalid("invalid_manifest", "manifest", "The manifest is not UTF-8 JSON.") from None
    return validate_manifest(raw, base_dir=absolute.parent)


def manifest_of(row: ProviderExtension) -> Manifest:
    return Manifest(
        extension_id=row.extension_id,
        capability=row.capability,
        protocol=row.protocol,
        entrypoint=tuple(row.entrypoint_argv),
        doctor=tuple(row.doctor_argv) if row.doctor_argv is not None else None,
        permission=row.permission,
        timeout_seconds=row.timeout_seconds,
        version=row.version,
        description=row.description,
        setup_hints=tuple(row.setup_hints or ()),
    )


def extension_payload(row: ProviderExtension) -> dict[str, Any]:
    """Public projection of an installed extension (no command, only its digest)."""
    return {
        "extension_id": row.extension_id,
        "version": row.version,
        "description": row.description,
        "capability": row.capability,
        "protocol": row.protocol,
        "permission": row.permission,
        "timeout_seconds": row.timeout_seconds,
        "doctor": row.doctor_argv is not None,
        "active": row.active,
        "manifest_digest": row.manifest_digest,
        "installed_at": clock.iso(row.installed_at),
        "updated_at": clock.iso(row.updated_at),
        "activated_at": clock.iso(row.activated_at) if row.activated_at else None,
    }


# -- runtime state: install / activate / deactivate / list ----------------------------


def _fields_from(manifest: Manifest) -> dict[str, Any]:
    return {
        "capability": manifest.capability,
        "protocol": manifest.protocol,
        "version": manifest.version,
        "description": manifest.description,
        "entrypoint_argv": list(manifest.entrypoint),
        "doctor_argv": list(manifest.doctor) if manifest.doctor is not None else None,
        "permission": manifest.permission,
        "timeout_seconds": manifest.timeout_seconds,
        "setup_hints": list(manifest.setup_hints),
        "manifest_digest": manifest.digest,
    }


def install_manifest(manifest: Manifest, *, execute: bool = False) -> dict[str, Any]:
    """Install (or update) an extension from a validated manifest; idempotent.

    A new extension is installed inactive; an update keeps the activation state. The
    same manifest again is ``unchanged`` and writes nothing. Without ``execute`` nothing
    is written and ``status`` is ``preview`` with the ``action`` a commit would take.
    """
    existing = ProviderExtension.objects.filter(extension_id=manifest.extension_id).first()
    action = (
        "install"
        if existing is None
        else ("unchanged" if existing.manifest_digest == manifest.digest else "update")
    )
    if not execute:
        now = clock.now()
        preview_row = ProviderExtension(
            extension_id=manifest.extension_id,
            active=existing.active if existing else False,
            installed_at=existing.installed_at if existing else now,
            updated_at=existing.updated_at if existing and action == "unchanged" else now,
            activated_at=existing.activated_at if existing else None,
            **_fields_from(manifest),
        )
        return _install_result("preview", action, preview_row)
    for _attempt in range(2):
        try:
            with transaction.atomic():
                row = (
                    ProviderExtension.objects.select_for_update()
                    .filter(extension_id=manifest.extension_id)
                    .first()
                )
                now = clock.now()
                if row is None:
                    with transaction.atomic():
                        row = ProviderExtension.objects.create(
                            extension_id=manifest.extension_id,
                            installed_at=now,
                            updated_at=now,
                            active=False,
                            **_fields_from(manifest),
                        )
                    return _install_result("installed", "install", row)
                if row.manifest_digest == manifest.digest:
                    return _install_result("unchanged", "unchanged", row)
                for name, value in _fields_from(manifest).items():
                    setattr(row, name, value)
                row.updated_at = now
                row.save()
                return _install_result("updated", "update", row)
        except IntegrityError:
            continue  # a concurrent install created it; take the update path
    raise SemanticPreferenceError(
        "operation_conflict", "Concurrent installs of this extension did not settle.", status=409
    )


def _install_result(status: str, action: str, row: ProviderExtension) -> dict[str, Any]:
    return {
        "schema_version": "semantic_preference_extension_install_v0",
        "status": status,
        "action": action,
        "extension": extension_payload(row),
    }


def set_active(extension_id: str, *, active: bool) -> dict[str, Any]:
    """Activate or deactivate an installed extension (idempotent, row-locked)."""
    if not isinstance(extension_id, str) or not config_module.PROVIDER_ID_RE.fullmatch(
        extension_id
    ):
        raise invalid(
            "invalid_argument",
            "extension_id",
            f"extension_id must match {config_module.PROVIDER_ID_RE.pattern}.",
        )
    with transaction.atomic():
        row = (
            ProviderExtension.objects.select_for_update().filter(extension_id=extension_id).first()
        )
        if row is None:
            raise SemanticPreferenceError(
                "not_found", "No installed extension has this id.", field="extension_id"
            )
        if row.active == active:
            status = "unchanged"
        else:
            now = clock.now()
            row.active = active
            row.updated_at = now
            row.activated_at = now if active else None
            row.save(update_fields=["active", "updated_at", "activated_at"])
            status = "activated" if active else "deactivated"
    return {
        "schema_version": "semantic_preference_extension_state_v0",
        "status": status,
        "extension": extension_payload(row),
    }


def list_extensions() -> dict[str, Any]:
    rows = ProviderExtension.objects.order_by("extension_id")
    return {
        "schema_version": "semantic_preference_extension_list_v0",
        "extensions": [extension_payload(r) for r in rows],
    }


# -- selection --------------------------------------------------------------------------


def _installed_from_db() -> list[InstalledExtension]:
    return [
        InstalledExtension(manifest=manifest_of(r), active=r.active)
        for r in ProviderExtension.objects.order_by("extension_id")
    ]


def _installed_from_state_file(path: Path) -> list[InstalledExtension]:
    if not path.is_file():
        raise BindingUnavailable
    raw = config_module.read_private_json(
        path,
        what="extension_state_file",
        not_found_code="invalid_config",
        invalid_code="invalid_config",
    )
    if (
        not isinstance(raw, dict)
        or set(raw) != {"schema_version", "extensions"}
        or raw["schema_version"] != STATE_SCHEMA
        or not isinstance(raw["extensions"], list)
    ):
        raise invalid(
            "invalid_config",
            "provider.extension_state_file",
            f"The extension state file must be a {STATE_SCHEMA} object.",
        )
    out = []
    for entry in raw["extensions"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("active"), bool):
            raise invalid(
                "invalid_config",
                "provider.extension_state_file",
                "Each state entry is a manifest plus a boolean active flag.",
            )
        body = {k: v for k, v in entry.items() if k != "active"}
        try:
            manifest = validate_manifest(body, base_dir=path.parent)
        except SemanticPreferenceError:
            raise invalid(
                "invalid_config",
                "provider.extension_state_file",
                "An entry of the extension state file is not a valid manifest.",
            ) from None
        out.append(InstalledExtension(manifest=manifest, active=entry["active"]))
    return out


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
    argv, env, cwd = runtime_command(manifest.entrypoint, permission=manifest.permission)
    doctor = None
    if manifest.doctor is not None:
        doctor, _, _ = runtime_command(manifest.doctor, permission=manifest.permission)
        doctor = (*doctor, *provider.args)
    return Binding(
        source="extension",
        provider_id=provider.id,
        extension_id=manifest.extension_id,
        argv=(*argv, *provider.args),
        doctor_argv=doctor,
        timeout_seconds=manifest.timeout_seconds,
        env=env,
        cwd=cwd,
        setup_hints=manifest.setup_hints,
    )


def runtime_command(
    argv: tuple[str, ...], *, permission: str
) -> tuple[tuple[str, ...], dict[str, str], str | None]:
    """(argv, extra environment, working directory) to run a manifest entrypoint."""
    if not is_project_entrypoint(argv):
        return argv, {}, None
    base = Path(settings.BASE_DIR)
    resolved = (sys.executable, str(base / "manage.py"), *argv[2:])
    env: dict[str, str] = {}
    if permission == "project_database_read":
        env = {
            "DJANGO_SETTINGS_MODULE": os.environ.get(
                "DJANGO_SETTINGS_MODULE", "loopx_site.settings"
            ),
            "PYTHONPATH": os.pathsep.join(
                [str(base), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
            ),
            "DATABASE_URL": database_url(),
            "LOOPX_RUNTIME_ID": settings.LOOPX_RUNTIME_ID,
        }
    return resolved, env, str(base)


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
