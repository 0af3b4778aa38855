"""``semantic_preference_hook_config_v0``: loading, validation, the git-ignore rule, context.

A config is local-private: a file the caller supplies (which git must ignore when it sits
in a work tree), a row an operator registered (``SemanticPreferenceConfig``), or a mapping
handed over in-process. Validation is strict — unknown fields are rejected at every level —
and the surfaces mapping is keyed by arbitrary module-qualified ids: nothing here (or
anywhere in the hook) branches on a surface or module name.

No error message carries the config path, the provider command or a config value.
"""

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from preferences.recall.errors import SemanticPreferenceError, invalid

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
MAX_SETUP_HINTS = 16
MAX_SETUP_HINT_CHARS = 500
FAILURE_POLICIES = ("fail_open", "fail_closed")
MAX_CONTEXT_ENTRIES = 16
MAX_CONTEXT_VALUE_CHARS = 500
MAX_PROJECT_CHARS = 1024

SURFACE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*(\.[A-Za-z0-9][A-Za-z0-9_-]*)+$")
MAX_SURFACE_CHARS = 128
PROVIDER_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
CONTEXT_KEY_RE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
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
    setup_hints: tuple[str, ...] = ()

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
            "A surface is a module-qualified id such as module.surface "
            f"(letters, digits, _ and -, dot-separated, at most {MAX_SURFACE_CHARS} chars).",
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
        raise invalid("invalid_config", field_name, f"{field_name} must be true or false.")
    return value


def _require_int(value: Any, field_name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise invalid(
            "invalid_config", field_name, f"{field_name} must be an integer {low}-{high}."
        )
    return value


def _require_str(value: Any, field_name: str, *, max_chars: int, min_chars: int = 1) -> str:
    if not isinstance(value, str) or not min_chars <= len(value) <= max_chars or "\x00" in value:
        raise invalid(
            "invalid_config",
            field_name,
            f"{field_name} must be a string of {min_chars}-{max_chars} characters without NUL.",
        )
    return value


def require_argv(value: Any, field_name: str, *, code: str = "invalid_config", allow_empty=False):
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
            "invalid_config",
            f"{prefix}{name}",
            f"Unknown config field {prefix}{name}.",
            unknown_fields=[str(k)[:64] for k in unknown[:8]],
        )


# -- validation -----------------------------------------------------------------------


def validate_config(
    raw: Any, *, origin: str = "inline", base_dir: Path | None = None
) -> HookConfig:
    """Validate a decoded ``semantic_preference_hook_config_v0`` object.

    Raises ``invalid_config`` naming the offending field (never echoing its value).
    """
    if not isinstance(raw, dict):
        raise invalid("invalid_config", None, "The config must be a JSON object.")
    _reject_unknown(raw, TOP_LEVEL_FIELDS, "")
    if raw.get("schema_version") != SCHEMA_VERSION:
        raise invalid(
            "invalid_config", "schema_version", f"schema_version must be {SCHEMA_VERSION}."
        )
    enabled = _require_bool(raw.get("enabled", False), "enabled")
    provider = None
    if "provider" in raw:
        provider = _validate_provider(raw["provider"], origin=origin, base_dir=base_dir)
    elif enabled:
        raise invalid("invalid_config", "provider", "An enabled config needs a provider.")
    surfaces_raw = raw.get("surfaces", {})
    if not isinstance(surfaces_raw, dict) or len(surfaces_raw) > MAX_SURFACES:
        raise invalid(
            "invalid_config",
            "surfaces",
            f"surfaces must be an object of at most {MAX_SURFACES} module-qualified ids.",
        )
    if enabled and not surfaces_raw:
        raise invalid("invalid_config", "surfaces", "An enabled config needs a surface.")
    surfaces = {}
    for surface_id, spec in surfaces_raw.items():
        require_surface_id(surface_id, "surfaces", code="invalid_config")
        surfaces[surface_id] = _validate_surface(surface_id, spec)
    return HookConfig(
        enabled=enabled, provider=provider, surfaces=surfaces, origin=origin, base_dir=base_dir
    )


def _validate_surface(surface_id: str, spec: Any) -> SurfaceConfig:
    prefix = f"surfaces.{surface_id}."
    if not isinstance(spec, dict):
        raise invalid("invalid_config", prefix[:-1], "A surface must be an object.")
    _reject_unknown(spec, SURFACE_FIELDS, prefix)
    if "query" not in spec:
        raise invalid("invalid_config", prefix + "query", "A surface needs a query.")
    query = _require_str(spec["query"], prefix + "query", max_chars=MAX_QUERY_CHARS)
    limit = _require_int(spec.get("limit", DEFAULT_LIMIT), prefix + "limit", 1, MAX_LIMIT)
    policy = spec.get("failure_policy", "fail_open")
    if policy not in FAILURE_POLICIES:
        raise invalid(
            "invalid_config",
            prefix + "failure_policy",
            "failure_policy must be fail_open or fail_closed.",
        )
    return SurfaceConfig(surface_id=surface_id, query=query, limit=limit, failure_policy=policy)


def _validate_provider(raw: Any, *, origin: str, base_dir: Path | None) -> ProviderConfig:
    if not isinstance(raw, dict):
        raise invalid("invalid_config", "provider", "provider must be an object.")
    _reject_unknown(raw, PROVIDER_FIELDS, "provider.")
    provider_id = None
    if "id" in raw:
        provider_id = raw["id"]
        if not isinstance(provider_id, str) or not PROVIDER_ID_RE.fullmatch(provider_id):
            raise invalid(
                "invalid_config", "provider.id", f"provider.id must match {PROVIDER_ID_RE.pattern}."
            )
    hints = raw.get("setup_hints", [])
    if not isinstance(hints, list) or len(hints) > MAX_SETUP_HINTS:
        raise invalid(
            "invalid_config",
            "provider.setup_hints",
            f"setup_hints must be a list of at most {MAX_SETUP_HINTS} strings.",
        )
    hints = tuple(
        _require_str(h, "provider.setup_hints", max_chars=MAX_SETUP_HINT_CHARS) for h in hints
    )
    if "argv" in raw:
        if "extension_id" in raw:
            raise invalid(
                "invalid_config",
                "provider.argv",
                "provider.argv and provider.extension_id are mutually exclusive.",
            )
        for extension_only in ("args", "extension_state_file"):
            if extension_only in raw:
                raise invalid(
                    "invalid_config",
                    f"provider.{extension_only}",
                    f"provider.{extension_only} applies to extension providers, not argv.",
                )
        argv = require_argv(raw["argv"], "provider.argv")
        timeout = _require_int(
            raw.get("timeout_seconds", DEFAULT_TIMEOUT_SECONDS),
            "provider.timeout_seconds",
            1,
            MAX_TIMEOUT_SECONDS,
        )
        probe = None
        if "probe_argv" in raw:
            probe = require_argv(raw["probe_argv"], "provider.probe_argv")
        return ProviderConfig(
            id=provider_id, argv=argv, timeout_seconds=timeout, probe_argv=probe, setup_hints=hints
        )
    for manifest_owned in ("timeout_seconds", "probe_argv"):
        if manifest_owned in raw:
            raise invalid(
                "invalid_config",
                f"provider.{manifest_owned}",
                f"provider.{manifest_owned} belongs to the extension manifest; "
                "a config cannot override it.",
            )
    args = require_argv(raw.get("args", []), "provider.args", allow_empty=True)
    extension_id = None
    if "extension_id" in raw:
        extension_id = raw["extension_id"]
        if not isinstance(extension_id, str) or not PROVIDER_ID_RE.fullmatch(extension_id):
            raise invalid(
                "invalid_config",
                "provider.extension_id",
                f"provider.extension_id must match {PROVIDER_ID_RE.pattern}.",
            )
    state_file = None
    if "extension_state_file" in raw:
        text = _require_str(
            raw["extension_state_file"], "provider.extension_state_file", max_chars=4096
        )
        state_file = Path(text)
        if not state_file.is_absolute():
            if base_dir is None:
                raise invalid(
                    "invalid_config",
                    "provider.extension_state_file",
                    "provider.extension_state_file must be absolute outside a config file.",
                )
            state_file = base_dir / state_file
    return ProviderConfig(
        id=provider_id,
        args=args,
        extension_id=extension_id,
        extension_state_file=state_file,
        setup_hints=hints,
    )


# -- files ----------------------------------------------------------------------------


def read_private_json(path: Path, *, what: str, not_found_code: str, invalid_code: str) -> Any:
    """Read a bounded local-private JSON file that git must ignore (see ``ensure_ignored``)."""
    try:
        absolute = Path(os.path.abspath(path))
        if not absolute.is_file():
            raise invalid(not_found_code, what, f"The {what} file does not exist or is not a file.")
        ensure_ignored(absolute, field_name=what)
        with absolute.open("rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError:
        raise invalid(not_found_code, what, f"The {what} file cannot be read.") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise invalid(invalid_code, what, f"The {what} file exceeds {MAX_CONFIG_BYTES} bytes.")
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError):
        raise invalid(invalid_code, what, f"The {what} file is not valid UTF-8 JSON.") from None


def _reject_constant(name: str):
    raise ValueError(name)


def load_config_file(path: str | os.PathLike) -> HookConfig:
    """Load and validate a config file; git must ignore it when it is in a work tree."""
    absolute = Path(os.path.abspath(path))
    raw = read_private_json(
        absolute, what="config", not_found_code="config_not_found", invalid_code="invalid_config"
    )
    config = validate_config(raw, origin="file", base_dir=absolute.parent)
    return config


# -- the git-ignore rule --------------------------------------------------------------


def _git_env() -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "LANG": "C",
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
    }


def _git(args: list[str], cwd: Path) -> int | None:
    """Exit status of a read-only git query; ``None`` when git cannot run."""
    git = shutil.which("git", path=os.environ.get("PATH", os.defpath))
    if git is None:
        return None
    try:
        done = subprocess.run(
            [git, "-c", "safe.directory=*", *args],
            cwd=cwd,
            env=_git_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=15,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.returncode


def _has_git_ancestor(path: Path) -> bool:
    return any((parent / ".git").exists() for parent in path.parents)


def ensure_ignored(path: Path, *, field_name: str = "config") -> None:
    """Raise ``config_not_ignored`` unless ``path`` is outside every git work tree or
    ignored (and untracked) there.

    Works on the path as given and on its symlink target. When git cannot answer but a
    ``.git`` entry exists above the file, the file is treated as not ignored (fail closed).
    """
    candidates = [path]
    try:
        resolved = path.resolve()
    except OSError:
        resolved = path
    if resolved != path:
        candidates.append(resolved)
    for candidate in candidates:
        directory = candidate.parent
        inside = _git(["rev-parse", "--is-inside-work-tree"], directory)
        if inside != 0 and not _has_git_ancestor(candidate):
            continue
        name = candidate.name
        tracked = _git(["ls-files", "--error-unmatch", "--", name], directory)
        ignored = _git(["check-ignore", "-q", "--", name], directory)
        if tracked == 0 or ignored != 0:
            raise invalid(
                "config_not_ignored",
                field_name,
                f"The {field_name} file is inside a git work tree and git does not ignore it; "
                "keep it local-private (add it to .gitignore, untracked).",
            )


# -- context --------------------------------------------------------------------------


def parse_context_entries(entries: list[str] | None) -> dict[str, str]:
    """``--context lower_snake=value`` entries (repeatable) → a validated mapping."""
    mapping: dict[str, str] = {}
    for entry in entries or []:
        if not isinstance(entry, str) or "=" not in entry:
            raise invalid(
                "invalid_context", "context", "Each --context entry must be lower_snake=value."
            )
        key, value = entry.split("=", 1)
        if key in mapping:
            raise invalid("invalid_context", "context", "A context key may appear only once.")
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
                "invalid_context", "context", "Each context key must be lower_snake (a-z, 0-9, _)."
            )
        if (
            not isinstance(value, str)
            or not 1 <= len(value) <= MAX_CONTEXT_VALUE_CHARS
            or _CONTROL_RE.search(value)
        ):
            raise invalid(
                "invalid_context",
                "context",
                f"Each context value must be 1-{MAX_CONTEXT_VALUE_CHARS} characters "
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
