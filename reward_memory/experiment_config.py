"""``reward_memory_experiment_config_v1``: reading and validating the private config.

The config is a local-private file (git must ignore it) that binds exactly one
Goal-scoped Agent to one ``project_provider_binding``, a list of registered corpora and
the module-owned surfaces that may use them. Nothing here scans corpora to guess a
route: a surface names its compatible ``corpus_ids``, exactly one ``ingest_corpus_id``
and its own ``recall_profile``.

Validation has two tiers:

* ``parse(document)`` — the document alone (shape, surfaces, automation defaults);
* ``check_registered(config, goal_id=, agent_id=)`` — against the registered corpora:
  each corpus exists and is active, its provider id and private scope ref are exactly
  the config's, it declares every surface that lists it, the corpora of one surface agree
  on class, authority, privacy, freshness and lifecycle, and a peer-scoped ref belongs to
  this (Goal, Agent).

Automation flags omitted from a v1 config default to ``true`` and are reported with
``default_on_enable`` provenance; an explicit ``false`` stays off (``explicit``).
Errors are ``config_invalid`` (``config_schema_unsupported`` for a non-v1 document);
messages name fields, never the file's path or a scope ref.
"""

import hashlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings

from loopx_site.core import files
from loopx_site.core.errors import DomainError
from reward_memory import contracts as c
from reward_memory.domain import uris
from reward_memory.domain import validation as v
from reward_memory.errors import RewardMemoryError
from reward_memory.models import Corpus
from reward_memory.peers import binding_peer
from reward_memory.providers import binding_ref

CONFIG_SCHEMA = "reward_memory_experiment_config_v1"
MAX_CONFIG_BYTES = 256 * 1024
AUTOMATION_FLAGS = ("automatic_recall", "automatic_ingest", "fail_open")
ADAPTERS = ("scoped_feedback", "issue_fix_maintainer_feedback")
PROVENANCE_EXPLICIT = "explicit"
PROVENANCE_DEFAULT = "default_on_enable"
MAX_PROFILE_LIMIT = 20


def config_error(field_name: str | None, message: str, code: str = "config_invalid"):
    return RewardMemoryError(code, message, field=field_name)


@dataclass(frozen=True)
class Surface:
    surface_id: str
    adapter: str
    corpus_ids: tuple[str, ...]
    ingest_corpus_id: str
    recall_profile: dict[str, Any]


@dataclass(frozen=True)
class ExperimentConfig:
    provider_id: str
    namespace: str
    scopes: dict[str, str]  # corpus_id -> private scope ref (never in a public payload)
    corpus_ids: tuple[str, ...]
    surfaces: dict[str, Surface]
    automation: dict[str, bool]
    automation_intent: dict[str, str]
    standing_policies: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def recall_profile_ids(self) -> list[str]:
        return sorted({s.recall_profile["profile_id"] for s in self.surfaces.values()})


# -- files -----------------------------------------------------------------------------
def config_root() -> Path:
    """The directory relative config paths are resolved against (the project checkout)."""
    root = (
        getattr(settings, "REWARD_MEMORY_CONFIG_ROOT", None)
        or os.environ.get("LOOPX_REWARD_MEMORY_CONFIG_ROOT")
        or settings.BASE_DIR
    )
    return Path(os.path.abspath(root))


def relative_path(path: str) -> str:
    """The config path relative to ``config_root()`` (refused outside it)."""
    if not isinstance(path, str) or not path.strip() or "\x00" in path:
        raise config_error("reward_memory_config", "`reward_memory_config` must be a path")
    root = config_root()
    absolute = Path(os.path.abspath(root / path))
    try:
        relative = absolute.relative_to(root)
    except ValueError:
        raise config_error(
            "reward_memory_config",
            "`reward_memory_config` must be inside the project checkout",
        ) from None
    if not relative.parts:
        raise config_error("reward_memory_config", "`reward_memory_config` must name a file")
    return relative.as_posix()


#: Passed git-ignore checks, by file identity, for a short while. The route is read on
#: every turn, hook and ingest, and the check runs git in a subprocess; a file that
#: changes (inode, mtime or size) is checked again at once, a ``.gitignore`` edit is seen
#: within the TTL. Refusals are never cached.
_IGNORE_CHECK_TTL_SECONDS = 60.0
_ignore_checked: dict[tuple, float] = {}


def _ensure_ignored(absolute) -> None:
    try:
        st = os.stat(absolute)
        key = (str(absolute), st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
    except OSError:
        key = None
    now = time.monotonic()
    if key is not None and _ignore_checked.get(key, 0.0) > now:
        return
    files.ensure_ignored(absolute, field_name="reward_memory_config", area="reward_memory")
    if key is not None:
        if len(_ignore_checked) > 1024:
            _ignore_checked.clear()
        _ignore_checked[key] = now + _IGNORE_CHECK_TTL_SECONDS


def read_config_bytes(relative: str) -> bytes:
    """The private config's bytes: a regular file, git-ignored, bounded. The git-ignore
    rule is the kernel's (``files.ensure_ignored``), as for semantic preference configs."""
    absolute = config_root() / relative
    try:
        _ensure_ignored(absolute)
    except DomainError as exc:
        raise config_error("reward_memory_config", exc.message, code=exc.code) from None
    try:
        return files.read_bytes(
            absolute,
            option="reward-memory-config",
            area="reward_memory",
            max_bytes=MAX_CONFIG_BYTES,
            code="config_invalid",
            not_found_code="config_not_found",
        )
    except DomainError as exc:
        raise config_error("reward_memory_config", exc.message, code=exc.code) from None


def config_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def load_bytes(data: bytes) -> ExperimentConfig:
    try:
        document = files.loads_json(
            data, option="reward-memory-config", area="reward_memory", code="config_invalid"
        )
    except DomainError as exc:
        raise config_error("reward_memory_config", exc.message, code=exc.code) from None
    return parse(document)


# -- the document ----------------------------------------------------------------------
def _strict(document: dict, allowed: set[str], where: str) -> None:
    for key in document:
        if key not in allowed:
            raise config_error(f"{where}.{key}" if where else key, "field not modelled by v1")


def _entries(value: Any, where: str, *, most: int, noun: str, keys: set[str]):
    """``(where.i, entry)`` for a list of 1..``most`` objects, each with only ``keys``."""
    if not isinstance(value, list) or not 1 <= len(value) <= most:
        raise config_error(where, f"must list 1..{most} {noun}")
    for i, entry in enumerate(value):
        at = f"{where}.{i}"
        entry = _check(v.obj, entry, at)
        _strict(entry, keys, at)
        yield at, entry


def _check(fn, *args, **kwargs):
    """Run a structural validator, re-coding its error as ``config_invalid``."""
    try:
        return fn(*args, **kwargs)
    except RewardMemoryError as exc:
        if exc.code == "invalid_argument":
            raise config_error(exc.field, exc.message) from None
        raise


def parse(document: Any) -> ExperimentConfig:
    if not isinstance(document, dict):
        raise config_error(None, "the config must be a JSON object")
    if document.get("schema_version") != CONFIG_SCHEMA:
        raise config_error(
            "schema_version",
            f"only {CONFIG_SCHEMA} is accepted; migrate the local config explicitly",
            code="config_schema_unsupported",
        )
    _strict(
        document,
        {"schema_version", "project_provider_binding", "corpora", "surfaces", "automation"},
        "",
    )
    provider_id, namespace, scopes = _provider_binding(document)
    corpus_ids, policies = _corpora(document, scopes)
    surfaces = _surfaces(document, corpus_ids)
    automation, intent = _automation(document)
    return ExperimentConfig(
        provider_id=provider_id,
        namespace=namespace,
        scopes=scopes,
        corpus_ids=tuple(corpus_ids),
        surfaces=surfaces,
        automation=automation,
        automation_intent=intent,
        standing_policies=policies,
    )


def _provider_binding(document: dict) -> tuple[str, str, dict[str, str]]:
    """``(provider_id, namespace, scopes)``: one provider for the project and exactly one
    scope per corpus."""
    binding = _check(v.obj, document.get("project_provider_binding"), "project_provider_binding")
    _strict(binding, {"provider_id", "namespace", "corpus_scopes"}, "project_provider_binding")
    provider_id = _check(
        v.choice, binding.get("provider_id"), "project_provider_binding.provider_id",
        ("local", "openviking", "double"),
    )  # fmt: skip
    namespace = _check(
        v.identifier,
        binding.get("namespace", "reward_memory"),
        "project_provider_binding.namespace",
    )
    scopes: dict[str, str] = {}
    for where, entry in _entries(
        binding.get("corpus_scopes"), "project_provider_binding.corpus_scopes",
        most=32, noun="scopes", keys={"corpus_id", "scope_ref"},
    ):  # fmt: skip
        corpus_id = _check(v.identifier, entry.get("corpus_id"), f"{where}.corpus_id")
        scope_ref = _check(v.text, entry.get("scope_ref"), f"{where}.scope_ref", max_length=512)
        if corpus_id in scopes:
            raise config_error(f"{where}.corpus_id", "each corpus has exactly one scope")
        scopes[corpus_id] = scope_ref
    return provider_id, namespace, scopes


def _corpora(document: dict, scopes: dict[str, str]) -> tuple[list[str], dict[str, dict]]:
    """The distinct corpora the config lists (each with its provider scope, and no scope
    without a corpus) and their standing policies."""
    corpus_ids: list[str] = []
    policies: dict[str, dict] = {}
    for where, entry in _entries(
        document.get("corpora"), "corpora", most=32, noun="corpora",
        keys={"corpus", "standing_policy"},
    ):  # fmt: skip
        corpus = _check(v.obj, entry.get("corpus"), f"{where}.corpus")
        corpus_id = _check(v.identifier, corpus.get("corpus_id"), f"{where}.corpus.corpus_id")
        if corpus_id in corpus_ids:
            raise config_error(f"{where}.corpus.corpus_id", "corpora must be distinct")
        if corpus_id not in scopes:
            raise config_error(f"{where}.corpus.corpus_id", "every corpus needs a provider scope")
        policies[corpus_id] = (
            _check(v.obj, entry.get("standing_policy"), f"{where}.standing_policy", required=False)
            or {}
        )
        corpus_ids.append(corpus_id)
    if set(scopes) != set(corpus_ids):
        raise config_error(
            "project_provider_binding.corpus_scopes", "scopes must match the listed corpora"
        )
    return corpus_ids, policies


def _surfaces(document: dict, corpus_ids: list[str]) -> dict[str, Surface]:
    """The distinct surfaces, each reading listed corpora and ingesting into one of its
    own."""
    surfaces: dict[str, Surface] = {}
    for where, entry in _entries(
        document.get("surfaces"), "surfaces", most=16, noun="surfaces",
        keys={"surface_id", "adapter", "corpus_ids", "ingest_corpus_id", "recall_profile"},
    ):  # fmt: skip
        surface_id = _check(v.surface, entry.get("surface_id"), f"{where}.surface_id")
        if surface_id in surfaces:
            raise config_error(f"{where}.surface_id", "surfaces must be distinct")
        adapter = _check(v.choice, entry.get("adapter"), f"{where}.adapter", ADAPTERS)
        listed = _check(
            v.string_list, entry.get("corpus_ids"), f"{where}.corpus_ids", v.identifier,
            required=True, min_items=1, max_items=8,
        )  # fmt: skip
        if len(set(listed)) != len(listed):
            raise config_error(f"{where}.corpus_ids", "corpus ids must be distinct")
        for corpus_id in listed:
            if corpus_id not in corpus_ids:
                raise config_error(f"{where}.corpus_ids", "names a corpus the config does not list")
        ingest = _check(v.identifier, entry.get("ingest_corpus_id"), f"{where}.ingest_corpus_id")
        if ingest not in listed:
            raise config_error(
                f"{where}.ingest_corpus_id", "must be one of the surface's corpus_ids"
            )
        surfaces[surface_id] = Surface(
            surface_id=surface_id,
            adapter=adapter,
            corpus_ids=tuple(listed),
            ingest_corpus_id=ingest,
            recall_profile=_profile(entry.get("recall_profile"), f"{where}.recall_profile"),
        )
    return surfaces


def _automation(document: dict) -> tuple[dict[str, bool], dict[str, str]]:
    """Each automation flag (default on) and where its value came from (default or
    explicit)."""
    automation_doc = _check(v.obj, document.get("automation"), "automation", required=False) or {}
    _strict(automation_doc, set(AUTOMATION_FLAGS), "automation")
    automation, intent = {}, {}
    for flag in AUTOMATION_FLAGS:
        value = _check(v.boolean, automation_doc.get(flag), f"automation.{flag}", required=False)
        automation[flag] = True if value is None else value
        intent[flag] = PROVENANCE_DEFAULT if value is None else PROVENANCE_EXPLICIT
    return automation, intent


def _profile(value: Any, where: str) -> dict[str, Any]:
    profile = _check(v.obj, value, where)
    _strict(profile, {"profile_id", "mode", "max_queries", "limit"}, where)
    mode = _check(v.choice, profile.get("mode"), f"{where}.mode", c.RECALL_MODES)
    ceiling = c.MAX_QUERIES[mode]
    return {
        "profile_id": _check(v.identifier, profile.get("profile_id"), f"{where}.profile_id"),
        "mode": mode,
        "max_queries": _check(
            v.integer,
            profile.get("max_queries", ceiling),
            f"{where}.max_queries",
            minimum=1,
            maximum=ceiling,
        ),
        "limit": _check(
            v.integer,
            profile.get("limit", 4),
            f"{where}.limit",
            minimum=1,
            maximum=MAX_PROFILE_LIMIT,
        ),
    }


# -- against the registry --------------------------------------------------------------
AGREEMENT_FIELDS = (
    ("memory_class", "class"),
    ("authority_source", "authority"),
    ("privacy", "privacy"),
    ("freshness_policy", "freshness"),
    ("retirement_authority", "lifecycle"),
)


def check_registered(config: ExperimentConfig) -> dict[str, Any]:
    """Exact checks against the registered corpora (see the module doc; the actor peer
    of a peer-scoped ref is checked by ``check_peers`` and again by every ingest); returns
    ``{corpus_id: Corpus}``. Raises ``config_invalid`` naming the first mismatch."""
    rows = {row.corpus_id: row for row in Corpus.objects.filter(corpus_id__in=config.corpus_ids)}
    for corpus_id in config.corpus_ids:
        row = rows.get(corpus_id)
        if row is None or not row.active:
            raise config_error("corpora", f"corpus {corpus_id} is not a registered active corpus")
        if row.provider_id != config.provider_id:
            raise config_error(
                "project_provider_binding.provider_id",
                f"corpus {corpus_id} is bound to another provider",
            )
        if row.provider_binding_ref != binding_ref(config.provider_id, config.scopes[corpus_id]):
            raise config_error(
                "project_provider_binding.corpus_scopes",
                f"the scope of corpus {corpus_id} is not its registered provider scope",
            )
    for surface in config.surfaces.values():
        first = rows[surface.corpus_ids[0]]
        for corpus_id in surface.corpus_ids:
            row = rows[corpus_id]
            if surface.surface_id not in (row.surfaces or []):
                raise config_error(
                    "surfaces", f"corpus {corpus_id} does not declare {surface.surface_id}"
                )
            for attr, label in AGREEMENT_FIELDS:
                if getattr(row, attr) != getattr(first, attr):
                    raise config_error(
                        "surfaces",
                        f"the corpora of {surface.surface_id} disagree on {label}",
                    )
    return rows


def is_private(rows: dict[str, Any]) -> bool:
    """A config whose corpora include an Agent-private one (one Agent per binding)."""
    return any(
        (row.privacy or {}).get("visibility", "private") == "private" for row in rows.values()
    )


def check_peers(rows: dict[str, Any], *, goal_id: str, agent_id: str) -> None:
    """A peer-scoped corpus scope must belong to this (Goal, Agent)'s configured peer."""
    for corpus_id, row in rows.items():
        peer = binding_peer(row, goal_id, agent_id)
        if not uris.peer_matches(row.provider_scope_ref, peer):
            raise config_error(
                "project_provider_binding.corpus_scopes",
                f"the scope of corpus {corpus_id} belongs to another actor peer",
            )
