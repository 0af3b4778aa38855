"""Deterministic guards: pure functions over plain JSON documents.

Two tiers:

* ``scan`` — the public-safe shape: every key of a document must be modelled by its
  contract (``SHAPES``), and no string may carry a URL, a local path or a
  credential-like token. Unmodelled keys are classified as raw content, authority
  grants or merely unmodelled.
* rule checks (``candidate_reasons``, ``standing_policy_reasons``, …) over a document
  that already passed the shape scan and structural validation.

Every failure is a ``Reason(code, field)``; the codes are ``contracts.REASON_CODES``.
Results are sorted and de-duplicated so the same input always yields the same list.
"""

import datetime as dt
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from loopx_site.core import scanner
from reward_memory import contracts as c
from reward_memory.domain import authority


@dataclass(frozen=True, order=True)
class Reason:
    code: str
    field: str | None = None

    def to_payload(self) -> dict[str, str | None]:
        return {"code": self.code, "field": self.field}


def normalise(reasons: Iterable[Reason]) -> list[Reason]:
    return sorted(set(reasons), key=lambda r: (r.code, r.field or ""))


def payload(reasons: Iterable[Reason]) -> list[dict[str, str | None]]:
    return [r.to_payload() for r in normalise(reasons)]


# -- shapes: the input contracts live in ``reward_memory.contracts`` ---------------------

RAW_FIELD_NAMES = frozenset(
    {
        "raw", "raw_content", "raw_text", "body", "text", "content", "full_text", "transcript",
        "chat", "messages", "conversation", "prompt", "completion", "tool_log", "tool_logs",
        "tool_output", "log", "logs", "stdout", "stderr", "diff", "patch", "source_quote",
        "quote", "comment_body", "feedback_body", "file_contents", "excerpt", "snippet",
    }
)  # fmt: skip
AUTHORITY_FIELD_NAMES = frozenset(
    {
        "authority", "grant", "grants", "permission", "permissions", "write_authority",
        "action_authority", "owner_override", "provider_binding", "provider_id",
        "provider_scope_ref", "scope_ref", "binding", "credentials", "credential", "token",
        "api_key", "secret", "password", "role_override", "allowlist", "agent_allowlist",
        "publish", "production", "merge", "standing_policy", "policy_override",
    }
)  # fmt: skip

_SCANNER_REASONS = {
    scanner.CREDENTIAL: "credential_like_content",
    scanner.URL_WITH_CREDENTIALS: "url_with_credentials",
    scanner.URL: "url_not_allowed",
    scanner.HOST: "url_not_allowed",
    scanner.IP_ADDRESS: "url_not_allowed",
    scanner.EMAIL: "url_not_allowed",
    scanner.LOCAL_PATH: "local_path",
}


def string_reasons(value: str, field: str | None) -> list[Reason]:
    """URL / host / local-path / credential checks of one string value (the shared
    scanner, ``loopx_site.core.scanner``, after NFKC and invisible-character removal)."""
    codes = {_SCANNER_REASONS[code] for code in scanner.scan_text(value)}
    if "url_with_credentials" in codes:
        codes.discard("url_not_allowed")
    return [Reason(code, field) for code in sorted(codes)]


def is_public_safe_text(value: str) -> bool:
    return not string_reasons(value, "")


def _classify_key(key: str) -> str:
    lowered = key.lower()
    if lowered in RAW_FIELD_NAMES or lowered.startswith("raw_"):
        return "raw_content_field"
    if lowered in AUTHORITY_FIELD_NAMES:
        return "authority_field"
    return "unmodelled_field"


_SAFE_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def scan(document: Any, shape: dict[str, Any] | None, *, prefix: str = "") -> list[Reason]:
    """Shape scan of ``document`` against ``shape`` (``None`` = a leaf value).

    Keys are reported by dotted path; the values of refused keys are never echoed.
    """
    reasons: list[Reason] = []
    if isinstance(document, dict):
        for key, value in document.items():
            safe = isinstance(key, str) and _SAFE_KEY.fullmatch(key)
            name = f"{prefix}{key}" if safe else f"{prefix}<unnamed>"
            if shape is None or not isinstance(key, str) or key not in shape:
                reasons.append(Reason(_classify_key(str(key)), name))
                continue
            reasons += scan(value, shape[key], prefix=name + ".")
    elif isinstance(document, list):
        for index, value in enumerate(document):
            reasons += scan(value, shape, prefix=f"{prefix}{index}.")
    elif isinstance(document, str):
        reasons += string_reasons(document, prefix.rstrip(".") or None)
    return reasons


# -- rule checks ---------------------------------------------------------------------------
MAX_COMPACT_CHARS = 600
MAX_COMPACT_LINES = 4
FUTURE_SKEW = dt.timedelta(minutes=5)


def compact_reasons(text: str, field: str) -> list[Reason]:
    if len(text) > MAX_COMPACT_CHARS or text.count("\n") >= MAX_COMPACT_LINES or "```" in text:
        return [Reason("content_not_compact", field)]
    return []


def forbidden_scope(scope: str) -> bool:
    """One rule, one list: ``reward_memory.domain.authority.FORBIDDEN_AUTHORITY_FAMILIES``."""
    return authority.forbidden_family(scope) is not None


CheckpointLookup = Callable[[str], authority.CheckpointFacts | None]
RoleBindings = Iterable[authority.RoleBinding]


@dataclass(frozen=True)
class CorpusBinding:
    """What a candidate is bound against (from a registered corpus)."""

    memory_class: str
    project: str
    surfaces: tuple[str, ...]
    max_source_age_days: int | None
    require_current_revision: bool


def candidate_reasons(
    candidate: dict[str, Any],
    *,
    observed_at: dt.datetime,
    expires_at: dt.datetime | None,
    now: dt.datetime,
    corpus: CorpusBinding | None = None,
    checkpoints: CheckpointLookup | None = None,
    roles: RoleBindings | None = None,
) -> list[Reason]:
    """Rule guards of a structurally valid, NFC-normalised candidate.

    ``checkpoints`` resolves a checkpoint id to what the server verified (``None``: no
    such live row); a candidate's own ``verified``/``actor``/``role`` claims are ignored.
    ``roles`` are the server-resolved role bindings of this activation
    (``roles.source_role_bindings``); given, an advisory candidate's
    ``source.actor``/``actor_role`` must be one of them (``actor_role_unverified``) — a
    hard_policy's are bound by its checkpoint. ``None``: a stateless evaluation that can
    activate nothing (the activation backstop refuses an unbound source).

    Checks only: raw-content boundary, scope binding, source freshness, unresolved
    conflicts, current-artifact proof and the authority checkpoint (hard-policy subset
    rule; advisory classes request no authority).
    """
    target = candidate["target_class"]
    reasons: list[Reason] = [
        *compact_reasons(candidate["content_summary"], "content_summary"),
        *compact_reasons(candidate["reasoning_summary"], "reasoning_summary"),
        *_scope_reasons(candidate, corpus),
        *_freshness_reasons(candidate, observed_at, expires_at, now, corpus),
    ]
    if candidate.get("conflicts"):
        reasons.append(Reason("unresolved_conflict", "conflicts"))
    proof = candidate.get("artifact_proof")
    proof_required = target == c.PROCEDURAL_EXPERIENCE or bool(proof and proof.get("required"))
    if proof_required and not (
        proof and proof.get("verified") is True and proof.get("artifact_digest")
    ):
        reasons.append(Reason("artifact_proof_missing", "artifact_proof"))
    reasons += _authority_reasons(candidate, expires_at, checkpoints)
    if roles is not None and target != c.HARD_POLICY:
        reasons += source_role_reasons(candidate, roles)
    return normalise(reasons)


def _scope_reasons(candidate: dict[str, Any], corpus: CorpusBinding | None) -> list[Reason]:
    """Scope binding: the revision or subject its class is bound to, and the corpus's
    class, project and surfaces."""
    target, scope = candidate["target_class"], candidate["scope"]
    reasons = []
    if target == c.RUN_BOUND_REWARD and not scope.get("subject_ref"):
        reasons.append(Reason("scope_unbound", "scope.subject_ref"))
    if target == c.WORKING_CONTEXT and not scope.get("session_revision"):
        reasons.append(Reason("scope_unbound", "scope.session_revision"))
    if target == c.PROCEDURAL_EXPERIENCE and not scope.get("repository_revision"):
        reasons.append(Reason("scope_unbound", "scope.repository_revision"))
    if corpus is not None:
        if target != corpus.memory_class:
            reasons.append(Reason("class_mismatch", "target_class"))
        if scope["project"] != corpus.project:
            reasons.append(Reason("project_mismatch", "scope.project"))
        if scope["surface"] not in corpus.surfaces:
            reasons.append(Reason("surface_mismatch", "scope.surface"))
    return reasons


def _freshness_reasons(
    candidate: dict[str, Any], observed_at, expires_at, now, corpus: CorpusBinding | None
) -> list[Reason]:
    """Source freshness: not from the future, not older than the corpus allows, the
    current revision where required, not already expired."""
    target = candidate["target_class"]
    freshness = candidate.get("freshness") or {}
    reasons = []
    if observed_at > now + FUTURE_SKEW:
        reasons.append(Reason("source_in_future", "source.observed_at"))
    max_age = corpus.max_source_age_days if corpus else None
    if max_age is not None and now - observed_at > dt.timedelta(days=max_age):
        reasons.append(Reason("source_stale", "source.observed_at"))
    source_rev = freshness.get("source_revision")
    current_rev = freshness.get("current_revision")
    require_current = corpus.require_current_revision if corpus else True
    if source_rev and current_rev and source_rev != current_rev:
        reasons.append(Reason("source_not_current", "freshness.source_revision"))
    elif target == c.PROCEDURAL_EXPERIENCE and require_current and not current_rev:
        reasons.append(Reason("source_not_current", "freshness.current_revision"))
    if expires_at is not None and expires_at <= now:
        reasons.append(Reason("already_expired", "expires_at"))
    return reasons


def _authority_reasons(
    candidate: dict[str, Any], expires_at, checkpoints: CheckpointLookup | None
) -> list[Reason]:
    """Authority: no forbidden scope; a hard_policy needs its checkpoint (and an expiry
    when its confidence is low); an advisory class requests none."""
    target = candidate["target_class"]
    requested = candidate.get("requested_action_scopes") or []
    reasons = [
        Reason("forbidden_action_scope", f"requested_action_scopes.{index}")
        for index, scope_name in enumerate(requested)
        if forbidden_scope(scope_name)
    ]
    if target == c.HARD_POLICY and candidate["confidence"]["level"] == "low" and not expires_at:
        reasons.append(Reason("weak_policy_needs_expiry", "expires_at"))
    if target != c.HARD_POLICY:
        if requested:
            reasons.append(Reason("advisory_requests_authority", "requested_action_scopes"))
    else:
        reasons += hard_policy_checkpoint_reasons(candidate, checkpoints)
    return reasons


def source_binding(
    candidate: dict[str, Any], roles: RoleBindings | None
) -> authority.RoleBinding | None:
    """The server record that binds the candidate's claimed ``source.actor`` to its
    claimed ``source.actor_role``, or ``None``. A hard_policy's own named checkpoint is
    preferred; otherwise the first binding in a stable order."""
    source = candidate.get("source") if isinstance(candidate.get("source"), dict) else {}
    actor, role = source.get("actor"), source.get("actor_role")
    matches = sorted(b for b in roles or () if b.actor == actor and b.role == role)
    named = checkpoint_ref_of(candidate) if candidate.get("target_class") == c.HARD_POLICY else None
    for binding in matches:
        if binding.basis == authority.ROLE_BASIS_CHECKPOINT and binding.ref == named:
            return binding
    if candidate.get("target_class") == c.HARD_POLICY:
        return None
    return matches[0] if matches else None


def source_role_reasons(candidate: dict[str, Any], roles: RoleBindings) -> list[Reason]:
    """``source.actor``/``actor_role`` are claims: they count only when a server record
    binds that actor to that role (``actor_role_unverified`` otherwise)."""
    if source_binding(candidate, roles) is None:
        return [Reason("actor_role_unverified", "source.actor_role")]
    return []


CHECKPOINT_FIELD = "authority_checkpoint.checkpoint_ref"


def checkpoint_ref_of(candidate: dict[str, Any]) -> str | None:
    checkpoint = candidate.get("authority_checkpoint")
    ref = checkpoint.get("checkpoint_ref") if isinstance(checkpoint, dict) else None
    return ref if isinstance(ref, str) and ref else None


def hard_policy_checkpoint_reasons(
    candidate: dict[str, Any], checkpoints: CheckpointLookup | None
) -> list[Reason]:
    """The operator-granted checkpoint the candidate names must be live and bind the same
    actor, role and project, with a superset of the requested action scopes. Only the
    checkpoint id is read from the candidate; everything else comes from the server."""
    reasons: list[Reason] = []
    requested = authority.normalise_scopes(candidate.get("requested_action_scopes"))
    if not requested:
        reasons.append(Reason("action_scope_unbound", "requested_action_scopes"))
    ref = checkpoint_ref_of(candidate)
    if ref is None:
        reasons.append(Reason("checkpoint_missing", "authority_checkpoint"))
        return reasons
    facts = checkpoints(ref) if checkpoints is not None else None
    if facts is None:
        reasons.append(Reason("checkpoint_unverified", CHECKPOINT_FIELD))
        return reasons
    if facts.state == "revoked":
        reasons.append(Reason("checkpoint_revoked", CHECKPOINT_FIELD))
    elif facts.state == "expired":
        reasons.append(Reason("checkpoint_expired", CHECKPOINT_FIELD))
    if facts.actor != candidate["source"]["actor"]:
        reasons.append(Reason("checkpoint_actor_mismatch", "source.actor"))
    if facts.role != candidate["source"]["actor_role"]:
        reasons.append(Reason("checkpoint_role_mismatch", "source.actor_role"))
    if facts.project != candidate["scope"]["project"]:
        reasons.append(Reason("checkpoint_project_mismatch", "scope.project"))
    if not requested <= facts.action_scopes:
        reasons.append(Reason("action_scope_not_in_checkpoint", "requested_action_scopes"))
    return reasons


def standing_policy_reasons(candidate: dict[str, Any], policy: dict[str, Any]) -> list[Reason]:
    """The exact boundary a ``reward_memory_standing_policy_v0`` pre-approves."""
    reasons: list[Reason] = []
    if candidate["target_class"] != policy["memory_class"]:
        reasons.append(Reason("class_mismatch", "target_class"))
    if candidate["scope"]["project"] != policy["project"]:
        reasons.append(Reason("project_mismatch", "scope.project"))
    if candidate["scope"]["surface"] != policy["surface"]:
        reasons.append(Reason("surface_mismatch", "scope.surface"))
    if candidate["source"]["kind"] not in policy["allowed_source_kinds"]:
        reasons.append(Reason("source_kind_not_allowed", "source.kind"))
    if candidate["source"]["actor_role"] not in policy["verified_actor_roles"]:
        reasons.append(Reason("actor_role_not_allowed", "source.actor_role"))
    if candidate["target_class"] == c.HARD_POLICY and candidate["confidence"]["level"] == "low":
        reasons.append(Reason("weak_policy_needs_review", "confidence.level"))
    requested = authority.normalise_scopes(candidate.get("requested_action_scopes"))
    if not requested <= authority.normalise_scopes(policy["action_scopes"]):
        reasons.append(Reason("action_scope_not_in_policy", "requested_action_scopes"))
    return normalise(reasons)
