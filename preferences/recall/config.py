"""``semantic_preference_hook_config_v0``: loading, validation, the git-ignore rule, context.

A config is local-private: a file the caller supplies (which git must ignore when it sits
in a work tree), a row an operator registered (``SemanticPreferenceConfig``), or a mapping
handed over in-process. Validation is strict — unknown fields are rejected at every level —
and the surfaces mapping is keyed by arbitrary module-qualified ids: nothing here (or
anywhere in the hook) branches on a surface or module name.

No error message carries the config path, the provider command or a config value.
"""

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopx_site.core import files
from loopx_site.core.errors import DomainError
from preferences.recall.errors import AREA, SemanticPreferenceError, invalid

SCHEMA_VERSION = "semantic_preference_hook_config_v0"
MAX_CONFIG_BYTES = 64 * 1024
DEFAULT_TIMEOUT_SECONDS = 30
MAX_TIMEOUT_SECONDS = 120
DEFAULT_LIMIT = 5
MAX_LIMIT = 20
MAX_QUERY_CHARS = 500
MAX_SURFACES = 64
MAX_ARGV_ITEMS = 64
MAX_ARG_CHARS = 4096
SETUP_HINT_KEYS = ("install", "configure")
MAX_SETUP_HINT_CHARS = 1000
FAILURE_POLICIES = ("fail_open", "fail_closed")
#: LoopX sets no count; ours stays bounded, well above what LoopX hosts send.
MAX_CONTEXT_ENTRIES = 64
MAX_CONTEXT_VALUE_CHARS = 500
MAX_PROJECT_CHARS = 1024

#: LoopX's module-qualified surface: lower-case segments, each starting with a letter.
SURFACE_RE = re.compile(r"^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)+$")
MAX_SURFACE_CHARS = 128
PROVIDER_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
#: LoopX's context key (``pr-number`` and ``pr__x`` included).
CONTEXT_KEY_RE = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
MAX_CONTEXT_KEY_CHARS = 64
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")

TOP_LEVEL_FIELDS = {"schema_version", "enabled", "provider", "surfaces"}
PROVIDER_FIELDS = {
    "id",
    "args",
    "argv",
    "timeout_seconds",
    "probe_argv",
    "extension_id",
    "extension_state_file",
    "setup_hints",
}
SURFACE_FIELDS = {"query", "limit", "failure_policy"}
#: Origins whose provider object may carry a command (argv, args, a state file): only a
#: local-private file the CLI reads in the operator's shell, and in-process callers.
COMMAND_ORIGINS = ("file", "inline")
#: The only provider fields a registered config (admin form, API) may set.
REGISTERED_PROVIDER_FIELDS = {"id", "extension_id", "setup_hints"}


@dataclass(frozen=True)
class SurfaceConfig:
    surface_id: str
    query: str
    limit: int = DEFAULT_LIMIT
    failure_policy: str = "fail_open"


@dataclass(frozen=True)
class ProviderConfig:
    """The provider object. ``argv`` set ⇒ the legacy path; otherwise an extension."""

    id: str | None = None
    args: tuple[str, ...] = ()
    argv: tuple[str, ...] | None = None
    timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS
    probe_argv: tuple[str, ...] | None = None
    extension_id: str | None = None
    extension_state_file: Path | None = None
    setup_hints: dict[str, str] = field(default_factory=dict)

    @property
    def is_legacy(self) -> bool:
        return self.argv is not None


@dataclass(frozen=True)
class HookConfig:
    enabled: bool
    provider: ProviderConfig | None
    surfaces: dict[str, SurfaceConfig] = field(default_factory=dict)
    #: Where the config came from: ``file``, ``registered`` or ``inline``.
    origin: str = "inline"
    #: Directory of the config file (relative ``extension_state_file`` resolves here).
    base_dir: Path | None = None

    def surface(self, surface_id: str) -> SurfaceConfig:
        require_surface_id(surface_id, "surface")
        try:
            return self.surfaces[surface_id]
        except KeyError:
            raise invalid("unknown_surface", "surface", "The surface is not configured.") from None


# -- shared shape checks --------------------------------------------------------------


def require_surface_id(value: Any, field_name: str, *, code: str = "invalid_argument") -> str:
    if (
        not isinstance(value, str)
        or len(value) > MAX_SURFACE_CHARS
        or not SURFACE_RE.fullmatch(value)
    ):
        raise invalid(
            code,
            field_name,
            "A surface is a module-qualified id such as module.surface (lower-case "
            "segments starting with a letter, then letters, digits, _ and -; at most "
            f"{MAX_SURFACE_CHARS} chars).",
        )
    return value


def require_project(value: Any) -> str:
    if (
        not isinstance(value, str)
        or not 1 <= len(value) <= MAX_PROJECT_CHARS
        or _CONTROL_RE.search(value)
    ):
        raise invalid(
            "invalid_argument",
            "project",
            f"project must be 1-{MAX_PROJECT_CHARS} characters without control characters.",
        )
    return value


def _require_bool(value: Any, field_name: str) -> bool:
    if not isinstance(value, bool):
        raise invalid("config_invalid", field_name, f"{field_name} must be true or false.")
    return value


def _require_int(value: Any, field_name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise invalid(
            "config_invalid", field_name, f"{field_name} must be an integer {low}-{high}."
        )
    return value


def _require_str(value: Any, field_name: str, *, max_chars: int, min_chars: int = 1) -> str:
    if not isinstance(value, str) or not min_chars <= len(value) <= max_chars or "\x00" in value:
        raise invalid(
            "config_invalid",
            field_name,
            f"{field_name} must be a string of {min_chars}-{max_chars} characters without NUL.",
        )
    return value


def require_argv(value: Any, field_name: str, *, code: str = "config_invalid", allow_empty=False):
    """A list of plain strings (a program and its arguments); never run through a shell."""
    if not isinstance(value, list) or len(value) > MAX_ARGV_ITEMS:
        raise invalid(
            code, field_name, f"{field_name} must be a list of at most {MAX_ARGV_ITEMS} strings."
        )
    if not value and not allow_empty:
        raise invalid(code, field_name, f"{field_name} must not be empty.")
    for item in value:
        if not isinstance(item, str) or not 1 <= len(item) <= MAX_ARG_CHARS or "\x00" in item:
            raise invalid(
                code, field_name, f"{field_name} items must be non-empty strings without NUL."
            )
    return tuple(value)


def _reject_unknown(mapping: dict, allowed: set[str], prefix: str) -> None:
    unknown = sorted(k for k in mapping if k not in allowed)
    if unknown:
        # Field names only (never values); a name is at most echoed truncated.
        name = str(unknown[0])[:64]
        raise invalid(
            "config_invalid",
            f"{prefix}{name}",
            f"Unknown config field {prefix}{name}.",
            unknown_fields=[str(k)[:64] for k in unknown[:8]],
        )


# -- validation -----------------------------------------------------------------------


def validate_config(
    raw: Any, *, origin: str = "inline", base_dir: Path | None = None
) -> HookConfig:
    """Validate a decoded ``semantic_preference_hook_config_v0`` object.

    Raises ``config_invalid`` naming the offending field (never echoing its value).
    """
    if not isinstance(raw, dict):
        raise invalid("config_invalid", None, "The config must be a JSON object.")
    _reject_unknown(raw, TOP_LEVEL_FIELDS, "")
    if raw.get("schema_version") != SCHEMA_VERSION:
        raise invalid(
            "config_invalid", "schema_version", f"schema_version must be {SCHEMA_VERSION}."
        )
    enabled = _require_bool(raw.get("enabled", False), "enabled")
    provider = None
    if origin not in COMMAND_ORIGINS and isinstance(raw.get("provider"), dict):
        _require_bindable(raw["provider"], enabled=enabled)
    if "provider" in raw:
        provider = _validate_provider(raw["provider"], origin=origin, base_dir=base_dir)
    elif enabled:
        raise invalid("config_invalid", "provider", "An enabled config needs a provider.")
    surfaces_raw = raw.get("surfaces", {})
    if not isinstance(surfaces_raw, dict) or len(surfaces_raw) > MAX_SURFACES:
        raise invalid(
            "config_invalid",
            "surfaces",
            f"surfaces must be an object of at most {MAX_SURFACES} module-qualified ids.",
        )
    if enabled and not surfaces_raw:
        raise invalid("config_invalid", "surfaces", "An enabled config needs a surface.")
    surfaces = {}
    for surface_id, spec in surfaces_raw.items():
        require_surface_id(surface_id, "surfaces", code="config_invalid")
        surfaces[surface_id] = _validate_surface(surface_id, spec)
    return HookConfig(
        enabled=enabled, provider=provider, surfaces=surfaces, origin=origin, base_dir=base_dir
    )


def _validate_surface(surface_id: str, spec: Any) -> SurfaceConfig:
    prefix = f"surfaces.{surface_id}."
    if not isinstance(spec, dict):
        raise invalid("config_invalid", prefix[:-1], "A surface must be an object.")
    _reject_unknown(spec, SURFACE_FIELDS, prefix)
    if "query" not in spec:
        raise invalid("config_invalid", prefix + "query", "A surface needs a query.")
    query = _require_str(spec["query"], prefix + "query", max_chars=MAX_QUERY_CHARS)
    limit = _require_int(spec.get("limit", DEFAULT_LIMIT), prefix + "limit", 1, MAX_LIMIT)
    policy = spec.get("failure_policy", "fail_open")
    if policy not in FAILURE_POLICIES:
        raise invalid(
            "config_invalid",
            prefix + "failure_policy",
            "failure_policy must be fail_open or fail_closed.",
        )
    return SurfaceConfig(surface_id=surface_id, query=query, limit=limit, failure_policy=policy)


def _require_bindable(provider: dict, *, enabled: bool) -> None:
    """A registered config only names an installed extension: no command of any kind."""
    for name in sorted(provider):
        if name not in REGISTERED_PROVIDER_FIELDS:
            raise invalid(
                "config_invalid",
                f"provider.{str(name)[:64]}",
                "A registered config binds an installed, active extension by "
                "provider.extension_id; provider commands, args, state files and timeouts "
                "come only from `semantic_preference extension install` in the operator's "
                "shell.",
            )
    if enabled and "extension_id" not in provider:
        raise invalid(
            "config_invalid",
            "provider.extension_id",
            "A registered config must name the installed extension by provider.extension_id.",
        )


def _validate_setup_hints(raw: Any) -> dict[str, str]:
    """LoopX's ``setup_hints`` object: optional ``install`` and ``configure`` strings."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise invalid(
            "config_invalid",
            "provider.setup_hints",
            "provider.setup_hints must be an object with install and/or configure.",
        )
    _reject_unknown(raw, set(SETUP_HINT_KEYS), "provider.setup_hints.")
    hints = {}
    for key in SETUP_HINT_KEYS:
        if key in raw:
            value = _require_str(
                raw[key], f"provider.setup_hints.{key}", max_chars=MAX_SETUP_HINT_CHARS
            ).strip()
            if value:
                hints[key] = value
    return hints


def _require_runnable(argv: tuple[str, ...], field_name: str) -> tuple[str, ...]:
    """A program is a bare command name (found on PATH) or an absolute path — never a
    relative path, which would resolve against whatever directory the caller chose."""
    program = argv[0]
    if "/" in program and not os.path.isabs(program):
        raise invalid(
            "config_invalid",
            field_name,
            f"{field_name}[0] must be a command name or an absolute path.",
        )
    return argv


def _validate_provider(raw: Any, *, origin: str, base_dir: Path | None) -> ProviderConfig:
    if not isinstance(raw, dict):
        raise invalid("config_invalid", "provider", "provider must be an object.")
    _reject_unknown(raw, PROVIDER_FIELDS, "provider.")
    provider_id = _provider_id(raw, "id")
    hints = _validate_setup_hints(raw.get("setup_hints"))
    if "argv" in raw:
        return _argv_provider(raw, provider_id, hints)
    return _extension_provider(raw, provider_id, hints, origin=origin, base_dir=base_dir)


def _provider_id(raw: dict, field: str) -> str | None:
    """``provider.<field>`` (``id``, ``extension_id``) when given: a provider id."""
    if field not in raw:
        return None
    value = raw[field]
    if not isinstance(value, str) or not PROVIDER_ID_RE.fullmatch(value):
        raise invalid(
            "config_invalid",
            f"provider.{field}",
            f"provider.{field} must match {PROVIDER_ID_RE.pattern}.",
        )
    return value


def _argv_provider(raw: dict, provider_id: str | None, hints) -> ProviderConfig:
    """A provider run from the config's own ``argv`` (no extension fields)."""
    if "extension_id" in raw:
        raise invalid(
            "config_invalid",
            "provider.argv",
            "provider.argv and provider.extension_id are mutually exclusive.",
        )
    for extension_only in ("args", "extension_state_file"):
        if extension_only in raw:
            raise invalid(
                "config_invalid",
                f"provider.{extension_only}",
                f"provider.{extension_only} applies to extension providers, not argv.",
            )
    argv = _require_runnable(require_argv(raw["argv"], "provider.argv"), "provider.argv")
    timeout = _require_int(
        raw.get("timeout_seconds", DEFAULT_TIMEOUT_SECONDS),
        "provider.timeout_seconds",
        1,
        MAX_TIMEOUT_SECONDS,
    )
    probe = None
    if "probe_argv" in raw:
        probe = _require_runnable(
            require_argv(raw["probe_argv"], "provider.probe_argv"), "provider.probe_argv"
        )
    return ProviderConfig(
        id=provider_id, argv=argv, timeout_seconds=timeout, probe_argv=probe, setup_hints=hints
    )


def _extension_provider(
    raw: dict, provider_id: str | None, hints, *, origin: str, base_dir: Path | None
) -> ProviderConfig:
    """A provider an extension manifest runs (the manifest owns its timeout and probe)."""
    for manifest_owned in ("timeout_seconds", "probe_argv"):
        if manifest_owned in raw:
            raise invalid(
                "config_invalid",
                f"provider.{manifest_owned}",
                f"provider.{manifest_owned} belongs to the extension manifest; "
                "a config cannot override it.",
            )
    return ProviderConfig(
        id=provider_id,
        args=require_argv(raw.get("args", []), "provider.args", allow_empty=True),
        extension_id=_provider_id(raw, "extension_id"),
        extension_state_file=_extension_state_file(raw, origin=origin, base_dir=base_dir),
        setup_hints=hints,
    )


def _extension_state_file(raw: dict, *, origin: str, base_dir: Path | None) -> Path | None:
    """``provider.extension_state_file``: only in a local-private config file the CLI
    reads; relative to that file."""
    if "extension_state_file" not in raw:
        return None
    text = _require_str(
        raw["extension_state_file"], "provider.extension_state_file", max_chars=4096
    )
    state_file = Path(text)
    if origin not in COMMAND_ORIGINS:
        raise invalid(
            "config_invalid",
            "provider.extension_state_file",
            "provider.extension_state_file is honoured only in a local-private config "
            "file read by the CLI.",
        )
    if not state_file.is_absolute():
        if base_dir is None:
            raise invalid(
                "config_invalid",
                "provider.extension_state_file",
                "provider.extension_state_file must be absolute outside a config file.",
            )
        state_file = base_dir / state_file
    return state_file


# -- files ----------------------------------------------------------------------------


def read_private_json(path: Path, *, what: str, not_found_code: str, invalid_code: str) -> Any:
    """Read a bounded local-private JSON file that git must ignore (see ``ensure_ignored``).

    Reading goes through ``loopx_site.core.files`` (regular files only, size and depth
    caps); its errors are re-coded for this area and never name the path.
    """
    absolute = Path(os.path.abspath(path))
    if not os.path.lexists(absolute):
        raise invalid(not_found_code, what, f"The {what} file does not exist or is not a file.")
    ensure_ignored(absolute, field_name=what)
    try:
        return files.read_json(
            absolute,
            option=what,
            area="semantic_preference",
            max_bytes=MAX_CONFIG_BYTES,
            code=invalid_code,
            not_found_code=not_found_code,
            allow_stdin=False,
            require_object=False,
        )
    except DomainError as exc:
        raise invalid(exc.code, what, exc.message) from None


def load_config_file(path: str | os.PathLike) -> HookConfig:
    """Load and validate a config file; git must ignore it when it is in a work tree."""
    absolute = Path(os.path.abspath(path))
    raw = read_private_json(
        absolute, what="config", not_found_code="config_not_found", invalid_code="config_invalid"
    )
    config = validate_config(raw, origin="file", base_dir=absolute.parent)
    return config


# -- the git-ignore rule --------------------------------------------------------------


def ensure_ignored(path: Path, *, field_name: str = "config") -> None:
    """``files.ensure_ignored`` with this hook's error type (``config_not_ignored``)."""
    try:
        files.ensure_ignored(path, field_name=field_name, area=AREA)
    except DomainError as exc:
        raise invalid(exc.code, exc.field, exc.message) from None


# -- context --------------------------------------------------------------------------


def parse_context_entries(entries: list[str] | None) -> dict[str, str]:
    """``--context lower_snake=value`` entries (repeatable) → a validated mapping."""
    mapping: dict[str, str] = {}
    for entry in entries or []:
        if not isinstance(entry, str) or "=" not in entry:
            raise invalid(
                "invalid_context",
                "context",
                "context must use lower-snake key=value syntax (lower_snake=value).",
            )
        key, value = entry.split("=", 1)
        mapping.pop(key, None)  # a repeated key: the last value wins, as in LoopX
        mapping[key] = value
    return validate_context(mapping)


def validate_context(mapping: Any) -> dict[str, str]:
    if mapping is None:
        return {}
    if not isinstance(mapping, dict) or len(mapping) > MAX_CONTEXT_ENTRIES:
        raise invalid(
            "invalid_context",
            "context",
            f"context must map at most {MAX_CONTEXT_ENTRIES} lower_snake keys to strings.",
        )
    out = {}
    for key, value in mapping.items():
        if (
            not isinstance(key, str)
            or len(key) > MAX_CONTEXT_KEY_CHARS
            or not CONTEXT_KEY_RE.fullmatch(key)
        ):
            raise invalid(
                "invalid_context",
                "context",
                "context must use lower-snake key=value syntax (keys: a-z, then a-z, 0-9, _, -).",
            )
        if (
            not isinstance(value, str)
            or len(value) > MAX_CONTEXT_VALUE_CHARS
            or _CONTROL_RE.search(value)
        ):
            raise invalid(
                "invalid_context",
                "context",
                f"Each context value must be at most {MAX_CONTEXT_VALUE_CHARS} characters "
                "without control characters.",
            )
        out[key] = value
    return dict(sorted(out.items()))


__all__ = [
    "SCHEMA_VERSION",
    "HookConfig",
    "ProviderConfig",
    "SemanticPreferenceError",
    "SurfaceConfig",
    "ensure_ignored",
    "load_config_file",
    "parse_context_entries",
    "validate_config",
    "validate_context",
]
