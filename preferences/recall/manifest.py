"""Provider extension manifests: parsing and validation — no database, no process.

Two formats install as is:

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
"""

import os
import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopx_site.core import files
from loopx_site.core.canonical import digest_ref, sha256_hex
from loopx_site.core.errors import DomainError
from preferences.documents import extensions as documents
from preferences.documents.extensions import MANIFEST_SCHEMA
from preferences.models import ProviderExtension
from preferences.recall import config as config_module
from preferences.recall.config import require_argv
from preferences.recall.errors import SemanticPreferenceError, invalid
from preferences.recall.protocol import PROTOCOL

LOOPX_MANIFEST_SCHEMA = "loopx_extension_manifest_v0"
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
        return documents.manifest(self)

    @property
    def digest(self) -> str:
        return digest_ref(self.as_document())

    @property
    def revision(self) -> str:
        return sha256_hex(self.as_document())[:16]


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


def revision_entry(row: ProviderExtension, revision: str) -> dict[str, Any] | None:
    for entry in row.revisions or []:
        if isinstance(entry, dict) and entry.get("revision") == revision:
            return entry
    return None
