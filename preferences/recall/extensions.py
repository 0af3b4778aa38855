"""Provider extensions: manifests, installed runtime state, lifecycle and selection.

A provider command comes only from here: an extension an operator installed with
``manage.py semantic_preference extension install --manifest FILE --execute`` (and did not
disable) in their own shell — or a local-private config file the CLI reads. A registered
config (admin form, API) can only name an installed extension by ``extension_id``.

Manifests. Two formats install as is:

* LoopX's TOML ``loopx_extension_manifest_v0`` (``id``, ``version``, ``permissions``,
  ``[runtime]`` with ``protocol``, ``entrypoint``, ``args``, ``doctor_args``,
  ``required_permissions``, ``timeout_seconds``, and ``[[implements]]``); it must declare
  and require ``semantic_preference.read`` and implement ``semantic-preference`` with
  ``semantic_preference_provider_v0``. Such a provider runs with ``PATH`` and ``LANG`` only.
* Our JSON ``loopx_provider_extension_manifest_v0`` (``extension_id``, ``entrypoint`` and
  ``doctor`` argv, ``permission``, ``timeout_seconds``, ``setup_hints``) — the shipped
  ``loopx-local`` manifest uses it.

A relative entrypoint is resolved against the manifest's directory, a bare command name
against ``PATH``, both once at install: the stored argv is absolute.

Lifecycle (``loopx_extension_operation_v0`` documents, preview unless ``execute``):
``install`` (new id; installs enabled), ``upgrade`` (new revision of an installed id; the
old one is kept for ``rollback``), ``enable`` / ``disable`` (aliases ``activate`` /
``deactivate``), ``rollback`` (swap the active and the rollback revision). Installing,
upgrading, enabling or rolling back an external provider that declares a doctor runs that
doctor first and refuses when it fails. At most ``MAX_REVISIONS`` revisions are kept.

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
import shutil
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.db import IntegrityError, connection, transaction

from loopx_site.core import clock, files
from loopx_site.core.canonical import digest_ref, sha256_hex
from loopx_site.core.errors import DomainError
from preferences.models import ProviderExtension
from preferences.recall import config as config_module
from preferences.recall.config import ProviderConfig, require_argv
from preferences.recall.errors import SemanticPreferenceError, invalid
from preferences.recall.protocol import PROTOCOL

MANIFEST_SCHEMA = "loopx_provider_extension_manifest_v0"
LOOPX_MANIFEST_SCHEMA = "loopx_extension_manifest_v0"
STATE_SCHEMA = "semantic_preference_extension_state_v0"
OPERATION_SCHEMA = "loopx_extension_operation_v0"
LIST_SCHEMA = "loopx_extension_state_v0"
CAPABILITY = "semantic-preference"
LOOPX_PERMISSION = "semantic_preference.read"
PERMISSIONS = {
    "provider_private": "The provider reads only its own storage; it gets PATH and LANG.",
    "project_database_read": (
        "The project's own `python manage.py …` entrypoint reads the project database; "
        "it also gets the settings module, PYTHONPATH, DATABASE_URL and the verified scope."
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
RUNTIME_FIELDS = {
    "protocol",
    "entrypoint",
    "args",
    "doctor_args",
    "required_permissions",
    "timeout_seconds",
}
MAX_MANIFEST_BYTES = 64 * 1024
MAX_REVISIONS = 5
BINDING_UNAVAILABLE = "extension_binding_unavailable"
#: Scope variables handed to the project's own provider (never taken from a request).
SCOPE_ENV = ("LOOPX_RECALL_GOAL_ID", "LOOPX_RECALL_AGENT_ID", "LOOPX_RECALL_PROJECT")


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
    setup_hints: dict[str, str] = field(default_factory=dict)
    source_format: str = "json"

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
            "setup_hints": dict(self.setup_hints),
        }

    @property
    def digest(self) -> str:
        return digest_ref(self.as_document())

    @property
    def revision(self) -> str:
        return sha256_hex(self.as_document())[:16]


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


# -- manifests ------------------------------------------------------------------------


def is_project_entrypoint(argv: tuple[str, ...] | list[str]) -> bool:
    return len(argv) >= 2 and argv[0] == "python" and argv[1] == "manage.py"


def _resolve_program(program: str, base_dir: Path | None) -> str:
    """Absolute path of a manifest program (relative → manifest dir, bare → ``PATH``)."""
    if os.path.isabs(program):
        return program
    if "/" in program:
        if base_dir is None:
            raise invalid(
                "invalid_manifest", "entrypoint", "A relative entrypoint needs a manifest file."
            )
        return str((base_dir / program).resolve())
    found = shutil.which(program, path=os.environ.get("PATH", os.defpath))
    return found or program


def _resolve_relative(argv: tuple[str, ...], base_dir: Path | None) -> tuple[str, ...]:
    if is_project_entrypoint(argv):
        return argv
    rest = tuple(
        str((base_dir / a).resolve()) if base_dir and a.startswith(("./", "../")) else a
        for a in argv[1:]
    )
    return (_resolve_program(argv[0], base_dir), *rest)


def _hints(raw: Any) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict) or set(raw) - set(config_module.SETUP_HINT_KEYS):
        raise invalid(
            "invalid_manifest", "setup_hints", "setup_hints is an object of install/configure."
        )
    out = {}
    for key, value in raw.items():
        if not isinstance(value, str) or len(value) > config_module.MAX_SETUP_HINT_CHARS:
            raise invalid("invalid_manifest", "setup_hints", "setup hints are short strings.")
        if value.strip():
            out[key] = value.strip()
    return out


def _texts(raw: dict) -> dict[str, str]:
    texts = {}
    for name, limit in (("version", 64), ("description", 500)):
        value = raw.get(name, "")
        if not isinstance(value, str) or len(value) > limit or "\x00" in value:
            raise invalid("invalid_manifest", name, f"{name} must be a string of ≤ {limit} chars.")
        texts[name] = value
    return texts


def _timeout(value: Any, field_name: str = "timeout_seconds") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 120:
        raise invalid("invalid_manifest", field_name, f"{field_name} must be an integer 1-120.")
    return value


def _extension_id(value: Any, field_name: str) -> str:
    if not isinstance(value, str) or not config_module.PROVIDER_ID_RE.fullmatch(value):
        raise invalid(
            "invalid_manifest",
            field_name,
            f"{field_name} must match {config_module.PROVIDER_ID_RE.pattern}.",
        )
    return value


def validate_manifest(raw: Any, *, base_dir: Path | None = None) -> Manifest:
    """Validate a manifest object of either format (``invalid_manifest``)."""
    if isinstance(raw, dict) and raw.get("schema_version") == LOOPX_MANIFEST_SCHEMA:
        return validate_loopx_manifest(raw, base_dir=base_dir)
    if not isinstance(raw, dict):
        raise invalid("invalid_manifest", None, "The manifest must be an object.")
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
            "invalid_manifest",
            "schema_version",
            f"schema_version must be {LOOPX_MANIFEST_SCHEMA} (TOML) or {MANIFEST_SCHEMA}.",
        )
    extension_id = _extension_id(raw["extension_id"], "extension_id")
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
    if is_project_entrypoint(entrypoint) and permission != "project_database_read":
        raise invalid(
            "invalid_manifest",
            "permission",
            "The project's `python manage.py …` entrypoint runs with project_database_read.",
        )
    texts = _texts(raw)
    return Manifest(
        extension_id=extension_id,
        capability=CAPABILITY,
        protocol=PROTOCOL,
        entrypoint=_resolve_relative(entrypoint, base_dir),
        doctor=_resolve_relative(doctor, base_dir) if doctor is not None else None,
        permission=permission,
        timeout_seconds=_timeout(raw["timeout_seconds"]),
        version=texts["version"],
        description=texts["description"],
        setup_hints=_hints(raw.get("setup_hints")),
    )


def _string_list(raw: dict, name: str, *, required: bool = False) -> list[str]:
    if name not in raw:
        if required:
            raise invalid("invalid_manifest", name, f"The manifest needs {name}.")
        return []
    return list(require_argv(raw[name], name, code="invalid_manifest", allow_empty=True))


def validate_loopx_manifest(raw: dict, *, base_dir: Path | None = None) -> Manifest:
    """LoopX's ``loopx_extension_manifest_v0`` (decoded TOML) → a provider manifest.

    Sections LoopX defines that this runtime does not use (``provides``, documentation,
    presentation) are accepted and ignored; everything the provider runs with is checked.
    """
    for name in ("id", "version", "requires_loopx_api"):
        if not isinstance(raw.get(name), str) or not raw[name]:
            raise invalid("invalid_manifest", name, f"The manifest needs a string {name}.")
    extension_id = _extension_id(raw["id"], "id")
    permissions = _string_list(raw, "permissions", required=True)
    runtime = raw.get("runtime")
    if not isinstance(runtime, dict):
        raise invalid("invalid_manifest", "runtime", "The manifest needs a [runtime] table.")
    unknown = sorted(str(k)[:64] for k in runtime if k not in RUNTIME_FIELDS)
    if unknown:
        raise invalid(
            "invalid_manifest",
            f"runtime.{unknown[0]}",
            f"runtime.{unknown[0]} is not supported by this runtime.",
        )
    if runtime.get("protocol") != PROTOCOL:
        raise invalid(
            "invalid_manifest", "runtime.protocol", f"runtime.protocol must be {PROTOCOL}."
        )
    program = runtime.get("entrypoint")
    if not isinstance(program, str) or not program or "\x00" in program:
        raise invalid("invalid_manifest", "runtime.entrypoint", "runtime.entrypoint is a path.")
    args = _string_list(runtime, "args")
    doctor_args = _string_list(runtime, "doctor_args") if "doctor_args" in runtime else None
    required = _string_list(runtime, "required_permissions")
    undeclared = sorted(set(required) - set(permissions))
    if undeclared:
        raise invalid(
            "invalid_manifest",
            "runtime.required_permissions",
            "The runtime requires undeclared permissions.",
            undeclared=undeclared,
        )
    if LOOPX_PERMISSION not in required:
        raise invalid(
            "invalid_manifest",
            "runtime.required_permissions",
            f"A semantic preference provider must declare and require {LOOPX_PERMISSION}.",
        )
    implements = raw.get("implements")
    matching = [
        item
        for item in (implements if isinstance(implements, list) else [])
        if isinstance(item, dict)
        and item.get("capability_id") == CAPABILITY
        and item.get("protocol") == PROTOCOL
    ]
    if len(matching) != 1:
        raise invalid(
            "invalid_manifest",
            "implements",
            f"The manifest must implement {CAPABILITY} with {PROTOCOL} exactly once.",
        )
    texts = _texts(raw)
    resolved = _resolve_program(program, base_dir)
    return Manifest(
        extension_id=extension_id,
        capability=CAPABILITY,
        protocol=PROTOCOL,
        entrypoint=(resolved, *args),
        doctor=(resolved, *args, *doctor_args) if doctor_args is not None else None,
        permission="provider_private",
        timeout_seconds=_timeout(runtime.get("timeout_seconds"), "runtime.timeout_seconds"),
        version=texts["version"],
        description=texts["description"],
        source_format="toml",
    )


def read_manifest_file(path: str | os.PathLike) -> Manifest:
    """Read and validate a manifest file — TOML (``.toml``) or JSON; bounded, regular
    files only, and no error names the path."""
    absolute = Path(os.path.abspath(path))
    try:
        data = files.read_text(
            absolute,
            option="manifest",
            area="semantic_preference",
            max_bytes=MAX_MANIFEST_BYTES,
            code="invalid_manifest",
            not_found_code="manifest_not_found",
        )
        if absolute.suffix.lower() == ".toml":
            try:
                raw = tomllib.loads(data)
            except (tomllib.TOMLDecodeError, RecursionError):
                raise invalid("invalid_manifest", "manifest", "The manifest is not TOML.") from None
        else:
            raw = files.loads_json(
                data, option="manifest", area="semantic_preference", code="invalid_manifest"
            )
    except SemanticPreferenceError:
        raise
    except DomainError as exc:
        raise invalid(exc.code, "manifest", exc.message) from None
    return validate_manifest(raw, base_dir=absolute.parent)


def manifest_from_document(document: dict[str, Any]) -> Manifest:
    """A stored (already resolved) manifest document back to a ``Manifest``."""
    return Manifest(
        extension_id=document["extension_id"],
        capability=document["capability"],
        protocol=document["protocol"],
        entrypoint=tuple(document["entrypoint"]),
        doctor=tuple(document["doctor"]) if document.get("doctor") is not None else None,
        permission=document["permission"],
        timeout_seconds=document["timeout_seconds"],
        version=document.get("version", ""),
        description=document.get("description", ""),
        setup_hints=dict(document.get("setup_hints") or {}),
    )


def manifest_of(row: ProviderExtension) -> Manifest:
    hints = row.setup_hints if isinstance(row.setup_hints, dict) else {}
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
        setup_hints=dict(hints),
    )


def _revision_entry(row: ProviderExtension, revision: str) -> dict[str, Any] | None:
    for entry in row.revisions or []:
        if isinstance(entry, dict) and entry.get("revision") == revision:
            return entry
    return None


def extension_payload(row: ProviderExtension) -> dict[str, Any]:
    """Public projection of an installed extension: LoopX's status fields plus ours (no
    command, only its digest)."""
    active_entry = _revision_entry(row, row.revision) or {}
    return {
        "id": row.extension_id,
        "extension_id": row.extension_id,
        "enabled": row.active,
        "active": row.active,
        "active_revision": row.revision or None,
        "rollback_available": bool(row.rollback_revision),
        "doctor_verified": bool(row.active and active_entry.get("doctor_verified")),
        "revision_count": len(row.revisions or []),
        "version": row.version,
        "description": row.description,
        "capability": row.capability,
        "protocol": row.protocol,
        "permission": row.permission,
        "timeout_seconds": row.timeout_seconds,
        "doctor": row.doctor_argv is not None,
        "manifest_digest": row.manifest_digest,
        "installed_at": clock.iso(row.installed_at),
        "updated_at": clock.iso(row.updated_at),
        "activated_at": clock.iso(row.activated_at) if row.activated_at else None,
    }


# -- the manifest doctor (read-only probe) ------------------------------------------------


def probe(manifest: Manifest, *, execute: bool) -> dict[str, Any]:
    """LoopX's extension doctor document for one manifest.

    ``probe_required`` before ``execute``; with it, the manifest doctor runs through the
    bounded runner (empty stdin) and ``ready``/``provider_unavailable`` follow its exit.
    The project's own entrypoint is not probed here (its doctor reads the project
    database): run ``semantic_preference doctor --execute`` for it.
    """
    from loopx_site.core import sandbox as runner

    document: dict[str, Any] = {
        "schema_version": "loopx_extension_doctor_v0",
        "extension_id": manifest.extension_id,
        "status": "ready",
        "available": True,
        "verified": False,
        "failure_kind": None,
        "external_writes_performed": False,
    }
    if manifest.doctor is None:
        return document
    builtin = is_project_entrypoint(manifest.doctor)
    if not builtin and not _program_exists(manifest.doctor[0]):
        document.update(status="provider_missing", available=False)
        document["failure_kind"] = "execution_failed"
        return document
    if not execute or builtin:
        document["status"] = "probe_required"
        return document
    run = runner.run(
        list(manifest.doctor),
        request=b"",
        timeout_seconds=manifest.timeout_seconds,
        env=runner.minimal_env(),
    )
    if run.failure_kind is None:
        document.update(status="ready", verified=True)
    else:
        document.update(status="provider_unavailable", available=False)
        document["failure_kind"] = run.failure_kind
    return document


def _program_exists(program: str) -> bool:
    if os.path.isabs(program):
        return os.path.isfile(program) and os.access(program, os.X_OK)
    return shutil.which(program, path=os.environ.get("PATH", os.defpath)) is not None


def _require_doctor_ready(manifest: Manifest, doctor: dict[str, Any], operation: str) -> None:
    if doctor["status"] not in ("ready", "probe_required"):
        raise SemanticPreferenceError(
            "extension_doctor_failed",
            f"The extension doctor is not ready ({doctor['status']}); {operation} refused.",
            field="manifest",
            details={"doctor_status": doctor["status"], "failure_kind": doctor["failure_kind"]},
        )


# -- runtime state: install / upgrade / enable / disable / rollback / list -----------------


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
        "setup_hints": dict(manifest.setup_hints),
        "manifest_digest": manifest.digest,
        "revision": manifest.revision,
    }


def _retain(revisions: list, entry: dict, keep: str | None) -> list:
    kept = [r for r in revisions or [] if r.get("revision") != entry["revision"]]
    kept.append(entry)
    if len(kept) > MAX_REVISIONS:
        required = [r for r in kept if r.get("revision") == keep]
        kept = kept[-MAX_REVISIONS:]
        if required and required[0] not in kept:
            kept = [required[0], *kept[-(MAX_REVISIONS - 1) :]]
    return kept


def _operation(
    operation: str,
    *,
    execute: bool,
    changed: bool,
    row: ProviderExtension,
    previous_revision: str | None = None,
    doctor: dict[str, Any] | None = None,
    would_change: bool | None = None,
) -> dict[str, Any]:
    document = {
        "ok": True,
        "schema_version": OPERATION_SCHEMA,
        "status": "preview" if not execute else ("applied" if changed else "unchanged"),
        "operation": operation,
        "dry_run": not execute,
        "changed": changed,
        "extension_id": row.extension_id,
        "version": row.version,
        "revision": row.revision,
        "previous_revision": previous_revision,
        "enabled": row.active,
        "doctor": doctor,
        "rollback_available": bool(row.rollback_revision),
        "extension": extension_payload(row),
    }
    if would_change is not None:
        document["would_change"] = would_change
    return document


def _locked(extension_id: str) -> ProviderExtension:
    _extension_id_argument(extension_id)
    row = ProviderExtension.objects.select_for_update().filter(extension_id=extension_id).first()
    if row is None:
        raise SemanticPreferenceError(
            "extension_not_found", "No installed extension has this id.", field="extension_id"
        )
    return row


def _extension_id_argument(extension_id: Any) -> str:
    if not isinstance(extension_id, str) or not config_module.PROVIDER_ID_RE.fullmatch(
        extension_id
    ):
        raise invalid(
            "invalid_argument",
            "extension_id",
            f"extension_id must match {config_module.PROVIDER_ID_RE.pattern}.",
        )
    return extension_id


def install_manifest(
    manifest: Manifest, *, execute: bool = False, operation: str = "install"
) -> dict[str, Any]:
    """``install`` a new extension (enabled) or ``upgrade`` an installed one.

    The same manifest again writes nothing (``changed: false``). ``install`` of an id
    that is installed with another manifest and ``upgrade`` of a missing id are refused.
    """
    if operation not in ("install", "upgrade"):
        raise invalid("invalid_argument", "operation", "operation must be install or upgrade.")
    doctor = probe(manifest, execute=execute)
    if execute:
        _require_doctor_ready(manifest, doctor, operation)
    for _attempt in range(2):
        try:
            with transaction.atomic():
                row = (
                    ProviderExtension.objects.select_for_update()
                    .filter(extension_id=manifest.extension_id)
                    .first()
                )
                return _install_locked(manifest, row, operation, execute, doctor)
        except IntegrityError:
            continue  # a concurrent install created it; decide again against that row
    raise SemanticPreferenceError(
        "operation_conflict", "Concurrent installs of this extension did not settle."
    )


def _install_locked(manifest, row, operation, execute, doctor) -> dict[str, Any]:
    if row is None and operation == "upgrade":
        raise SemanticPreferenceError(
            "extension_not_found",
            "No installed extension has this id; install it first.",
            field="manifest",
        )
    if row is not None and row.revision == manifest.revision:
        return _operation(operation, execute=execute, changed=False, row=row, doctor=doctor)
    if row is not None and operation == "install":
        raise invalid(
            "extension_installed",
            "manifest",
            "This extension is already installed with another manifest; use `extension upgrade`.",
        )
    now = clock.now()
    entry = {
        "revision": manifest.revision,
        "version": manifest.version,
        "manifest": manifest.as_document(),
        "doctor_verified": bool(doctor.get("verified")),
    }
    previous = row.revision if row is not None else None
    if row is None:
        row = ProviderExtension(
            extension_id=manifest.extension_id, installed_at=now, activated_at=now, active=True
        )
    for name, value in _fields_from(manifest).items():
        setattr(row, name, value)
    row.rollback_revision = previous or ""
    row.revisions = _retain(list(row.revisions or []), entry, previous)
    if operation == "upgrade" and not row.active:
        row.active = True
        row.activated_at = now
    row.updated_at = now
    if not execute:
        return _operation(
            operation,
            execute=False,
            changed=False,
            row=row,
            previous_revision=previous,
            doctor=doctor,
            would_change=True,
        )
    with transaction.atomic():
        row.save()
    return _operation(
        operation, execute=True, changed=True, row=row, previous_revision=previous, doctor=doctor
    )


def set_active(extension_id: str, *, active: bool, execute: bool = False) -> dict[str, Any]:
    """``enable`` / ``disable`` an installed extension (idempotent, row-locked)."""
    operation = "enable" if active else "disable"
    with transaction.atomic():
        row = _locked(extension_id)
        doctor = None
        if active:
            doctor = probe(manifest_of(row), execute=execute)
            if execute and not row.active:
                _require_doctor_ready(manifest_of(row), doctor, operation)
        would_change = row.active != active
        if execute and would_change:
            now = clock.now()
            row.active = active
            row.updated_at = now
            row.activated_at = now if active else None
            row.save(update_fields=["active", "updated_at", "activated_at"])
        return _operation(
            operation,
            execute=execute,
            changed=execute and would_change,
            row=row,
            doctor=doctor,
            would_change=would_change,
        )


def rollback(extension_id: str, *, execute: bool = False) -> dict[str, Any]:
    """Make the rollback revision active again (the current one becomes the rollback)."""
    with transaction.atomic():
        row = _locked(extension_id)
        target = _revision_entry(row, row.rollback_revision) if row.rollback_revision else None
        if target is None:
            raise invalid(
                "no_rollback_revision", "extension_id", "This extension has no rollback revision."
            )
        manifest = manifest_from_document(target["manifest"])
        doctor = probe(manifest, execute=execute)
        if execute:
            _require_doctor_ready(manifest, doctor, "rollback")
        previous = row.revision
        if not execute:
            return _operation(
                "rollback",
                execute=False,
                changed=False,
                row=row,
                previous_revision=previous,
                doctor=doctor,
                would_change=True,
            )
        now = clock.now()
        for name, value in _fields_from(manifest).items():
            setattr(row, name, value)
        row.rollback_revision = previous
        if not row.active:
            row.active, row.activated_at = True, now
        row.updated_at = now
        row.save()
        return _operation(
            "rollback",
            execute=True,
            changed=True,
            row=row,
            previous_revision=previous,
            doctor=doctor,
        )


def list_extensions() -> dict[str, Any]:
    rows = ProviderExtension.objects.order_by("extension_id")
    return {
        "ok": True,
        "schema_version": LIST_SCHEMA,
        "status": "listed",
        "extensions": [extension_payload(r) for r in rows],
    }


# -- selection --------------------------------------------------------------------------


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
