"""Stateless receipts: built, validated and returned — never written.

``semantic_preference_application_receipt_v0`` holds only the surface, the application
id, the outcome, an optional public ``https://`` artifact reference and the 16-hex-char
sha256 prefixes of the provider-owned preference refs (at most 20).

``semantic_preference_maintenance_receipt_v0`` holds only the trigger, the outcome, the
corpus ids, an optional compact evidence reference and the digests of the scope refs.
"""

import ipaddress
import re
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from preferences.recall.config import require_surface_id
from preferences.recall.errors import invalid
from preferences.recall.protocol import (
    CORPUS_ID_RE,
    MAINTENANCE_OUTCOMES,
    MAX_REF_CHARS,
    WRITEBACK_TRIGGERS,
    ref_digest,
)

APPLICATION_SCHEMA = "semantic_preference_application_receipt_v0"
MAINTENANCE_SCHEMA = "semantic_preference_maintenance_receipt_v0"
APPLICATION_OUTCOMES = ("applied", "ignored", "failed")
MAX_PREFERENCE_REFS = 20
MAX_SCOPE_REFS = 32
MAX_CORPUS_IDS = 32
MAX_URL_CHARS = 2048
APPLICATION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
EVIDENCE_TOKEN_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$")
_CREDENTIAL_KEY_RE = re.compile(
    r"(token|secret|passw|signature|^sig$|credential|api_?key|access_?key|auth|session|"
    r"^key$|^code$|x-amz-|sas)",
    re.IGNORECASE,
)
_PRIVATE_SUFFIXES = (".localhost", ".local", ".internal", ".lan", ".home.arpa", ".localdomain")
_HOST_LABEL_RE = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


def public_https_url(value: Any, field: str) -> str:
    """Accept only a public ``https://`` URL without credentials (userinfo, or
    credential-like query/fragment parameters) and without a private host."""
    problem = "must be a public https:// URL without credentials"
    if (
        not isinstance(value, str)
        or not 1 <= len(value) <= MAX_URL_CHARS
        or re.search(r"[\x00-\x20\x7f]", value)
    ):
        raise invalid("invalid_argument", field, f"{field} {problem}.")
    try:
        parts = urlsplit(value)
        host = parts.hostname
        _ = parts.port
    except ValueError:
        raise invalid("invalid_argument", field, f"{field} {problem}.") from None
    if parts.scheme != "https" or not host or "@" in parts.netloc:
        raise invalid("invalid_argument", field, f"{field} {problem}.")
    host = host.rstrip(".").lower()
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is not None:
        if not address.is_global:
            raise invalid("invalid_argument", field, f"{field} {problem}.")
    elif (
        "." not in host
        or host == "localhost"
        or host.endswith(_PRIVATE_SUFFIXES)
        or not all(_HOST_LABEL_RE.fullmatch(label) for label in host.split("."))
    ):
        raise invalid("invalid_argument", field, f"{field} {problem}.")
    for part in (parts.query, parts.fragment):
        for key, _value in parse_qsl(part, keep_blank_values=True):
            if _CREDENTIAL_KEY_RE.search(key):
                raise invalid("invalid_argument", field, f"{field} {problem}.")
    return value


def _ref_digests(refs: Any, field: str, *, minimum: int, maximum: int) -> list[str]:
    if not isinstance(refs, list | tuple) or not minimum <= len(refs) <= maximum:
        raise invalid(
            "invalid_argument", field, f"{field} must hold {minimum}-{maximum} references."
        )
    digests: list[str] = []
    for ref in refs:
        if not isinstance(ref, str) or not 1 <= len(ref) <= MAX_REF_CHARS or "\x00" in ref:
            raise invalid(
                "invalid_argument",
                field,
                f"Each {field} item must be 1-{MAX_REF_CHARS} characters without NUL.",
            )
        digest = ref_digest(ref)
        if digest not in digests:
            digests.append(digest)
    return digests


def application_receipt(
    *,
    surface: str,
    application_id: str,
    outcome: str,
    preference_refs: list[str] | tuple[str, ...],
    artifact_ref: str | None = None,
) -> dict[str, Any]:
    """Build a ``semantic_preference_application_receipt_v0`` (returned, not written)."""
    require_surface_id(surface, "surface")
    if not isinstance(application_id, str) or not APPLICATION_ID_RE.fullmatch(application_id):
        raise invalid(
            "invalid_argument",
            "application_id",
            f"application_id must match {APPLICATION_ID_RE.pattern}.",
        )
    if outcome not in APPLICATION_OUTCOMES:
        raise invalid(
            "invalid_argument", "outcome", "outcome must be one of applied, ignored, failed."
        )
    digests = _ref_digests(
        list(preference_refs) if isinstance(preference_refs, list | tuple) else preference_refs,
        "preference_ref",
        minimum=1,
        maximum=MAX_PREFERENCE_REFS,
    )
    if artifact_ref is not None:
        public_https_url(artifact_ref, "artifact_ref")
    return {
        "schema_version": APPLICATION_SCHEMA,
        "surface": surface,
        "application_id": application_id,
        "outcome": outcome,
        "artifact_ref": artifact_ref,
        "preference_ref_digests": digests,
    }


def maintenance_receipt(
    *,
    trigger: str,
    outcome: str,
    corpus_ids: list[str] | tuple[str, ...],
    scope_refs: list[str] | tuple[str, ...] = (),
    evidence_ref: str | None = None,
) -> dict[str, Any]:
    """Build a ``semantic_preference_maintenance_receipt_v0`` (returned, not written)."""
    if trigger not in WRITEBACK_TRIGGERS:
        raise invalid(
            "invalid_argument",
            "trigger",
            "trigger must be explicit_feedback or source_truth_changed.",
        )
    if outcome not in MAINTENANCE_OUTCOMES:
        raise invalid(
            "invalid_argument", "outcome", "outcome must be verified or no_write_rationale."
        )
    if not isinstance(corpus_ids, list | tuple) or not 1 <= len(corpus_ids) <= MAX_CORPUS_IDS:
        raise invalid("invalid_argument", "corpus_id", f"Give 1-{MAX_CORPUS_IDS} corpus ids.")
    for corpus_id in corpus_ids:
        if not isinstance(corpus_id, str) or not CORPUS_ID_RE.fullmatch(corpus_id):
            raise invalid(
                "invalid_argument", "corpus_id", f"corpus ids must match {CORPUS_ID_RE.pattern}."
            )
    scope_digests = _ref_digests(
        list(scope_refs) if isinstance(scope_refs, list | tuple) else scope_refs,
        "scope_ref",
        minimum=0,
        maximum=MAX_SCOPE_REFS,
    )
    if evidence_ref is not None and not (
        isinstance(evidence_ref, str) and EVIDENCE_TOKEN_RE.fullmatch(evidence_ref)
    ):
        public_https_url(evidence_ref, "evidence_ref")
    return {
        "schema_version": MAINTENANCE_SCHEMA,
        "trigger": trigger,
        "outcome": outcome,
        "corpus_ids": sorted(set(corpus_ids)),
        "evidence_ref": evidence_ref,
        "scope_ref_digests": sorted(scope_digests),
    }
