"""Stateless receipts: validated and returned — never written (``preferences.documents``
renders them).

``semantic_preference_application_receipt_v0`` holds only the surface, the application
id, the outcome, an optional artifact reference and the 16-hex-char sha256 prefixes of
the provider-owned preference refs (at most 20).

``semantic_preference_maintenance_receipt_v0`` holds only the trigger, the outcome, the
corpus ids, an optional evidence reference and the digests of the scope refs.

An artifact or evidence reference is what LoopX accepts — its public-safe reference
(``owner/repo#126``, ``github:pr/7``, ``https://127.0.0.1/x``: ``[A-Za-z0-9]`` then
``[A-Za-z0-9._:/#-]``, at most 200 characters) — except what would carry a credential or
name a local path (``reference_problem``), or else a public ``https://`` URL without
credentials (which may have a query, which LoopX's form cannot).
"""

import ipaddress
import re
import socket
from typing import Any
from urllib.parse import urlsplit

from loopx_site.core.errors import DomainError
from loopx_site.core.validation import credential_like_segment, require_credential_free_url
from preferences.recall.config import require_surface_id
from preferences.recall.errors import AREA, invalid
from preferences.recall.protocol import (
    CORPUS_ID_RE,
    MAINTENANCE_OUTCOMES,
    MAX_REF_CHARS,
    WRITEBACK_TRIGGERS,
    ref_digest,
)

APPLICATION_OUTCOMES = ("applied", "ignored", "failed")
MAX_PREFERENCE_REFS = 20
MAX_SCOPE_REFS = 32
MAX_CORPUS_IDS = 32
MAX_URL_CHARS = 2048
#: LoopX's public-safe reference (``owner/repo#123``; at most 200 characters).
APPLICATION_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/#-]{0,199}")
#: First segments that make a scheme-less reference a local path (``home/me/.ssh``).
_LOCAL_ROOTS = frozenset(
    {"home", "users", "root", "tmp", "var", "etc", "private", "mnt", "media", "opt", "usr",
     "srv", "proc", "dev", "run", "sys", "volumes", "library", "applications", "~"}
)  # fmt: skip
_SCHEME_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):(.*)", re.DOTALL)
_DRIVE_RE = re.compile(r"[A-Za-z]:")
_PRIVATE_SUFFIXES = (".localhost", ".local", ".internal", ".lan", ".home.arpa", ".localdomain")
_HOST_LABEL_RE = re.compile(r"(?!-)[a-z0-9-]{1,63}(?<!-)\Z")
#: A top-level label has a letter (an all-digit or hex label is an address spelling).
_TLD_RE = re.compile(r"(xn--[a-z0-9-]+|[a-z][a-z0-9-]*[a-z]|[a-z]{2,})")


def _obfuscated_ipv4(host: str) -> bool:
    """True for every spelling the C resolver reads as an IPv4 address other than the
    canonical dotted quad: ``127.1``, ``0x7f.1``, ``2130706433``, ``0177.0.0.1`` …"""
    try:
        socket.inet_aton(host)
    except (OSError, ValueError):
        return False
    try:
        return str(ipaddress.IPv4Address(host)) != host
    except ValueError:
        return True


def _public_address(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address):
        for embedded in (address.ipv4_mapped, address.sixtofour):
            if embedded is not None and not embedded.is_global:
                return False
        if address.teredo is not None:
            return False
    return address.is_global and not address.is_multicast


def _public_host(host: str) -> bool:
    """A public name or a public canonical address: never private, link-local, reserved,
    an internal suffix, a single label or an obfuscated IPv4 spelling."""
    host = host.rstrip(".").lower()
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is not None:
        return _public_address(address) and not (address.version == 4 and str(address) != host)
    return not (
        "." not in host
        or host == "localhost"
        or host.endswith(_PRIVATE_SUFFIXES)
        or _obfuscated_ipv4(host)
        or not all(_HOST_LABEL_RE.fullmatch(label) for label in host.split("."))
        or not _TLD_RE.fullmatch(host.rsplit(".", 1)[-1])
    )


def _loopback_host(host: str) -> bool:
    """``localhost`` or a canonical loopback address (``127.0.0.1``, ``::1``)."""
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback and not (address.version == 4 and str(address) != host)


def public_https_url(value: Any, field: str, *, loopback: bool = False) -> str:
    """Accept only a public ``https://`` URL (with ``loopback``: also ``http(s)://`` to a
    loopback host): no userinfo, no credential-looking path, query or fragment parameter,
    and a host that is a public name or a public canonical address — never private,
    link-local, reserved or an obfuscated IPv4 spelling."""
    problem = (
        "must be a public https:// URL (or http(s):// to loopback) without credentials"
        if loopback
        else "must be a public https:// URL without credentials"
    )
    if (
        not isinstance(value, str)
        or not 1 <= len(value) <= MAX_URL_CHARS
        or re.search(r"[\x00-\x20\x7f\\]", value)
    ):
        raise invalid("invalid_argument", field, f"{field} {problem}.")
    try:
        parts = urlsplit(value)
        host = parts.hostname
        _ = parts.port
    except ValueError:
        raise invalid("invalid_argument", field, f"{field} {problem}.") from None
    if not host or "@" in parts.netloc or "%" in parts.netloc:
        raise invalid("invalid_argument", field, f"{field} {problem}.")
    allowed_schemes = ("http", "https") if loopback else ("https",)
    at_loopback = loopback and _loopback_host(host)
    scheme_ok = parts.scheme in allowed_schemes and (at_loopback or parts.scheme == "https")
    if not scheme_ok or not (at_loopback or _public_host(host)):
        raise invalid("invalid_argument", field, f"{field} {problem}.")
    # The one URL rule (core): no userinfo, no credential-like path segment, query or
    # fragment value, no credential-named parameter.
    try:
        return require_credential_free_url(value, field, area=AREA)
    except DomainError as exc:
        raise invalid("invalid_argument", field, exc.message, **exc.details) from None


def reference_problem(value: str) -> str | None:
    """Why a reference in LoopX's public-safe form may still not be taken, or ``None``:
    a URL scheme other than http(s) (``file://``), a credential in any part, or a local
    path (a ``.``/``..``/hidden segment, a drive letter, or a first segment such as
    ``home``, ``Users``, ``tmp``)."""
    match = _SCHEME_RE.fullmatch(value)
    path = value
    if match and match.group(2).startswith("//"):
        if match.group(1).lower() not in ("http", "https"):
            return "must be an http(s) URL or a compact reference (no other URL scheme)"
        path = urlsplit(value).path
    elif match and _DRIVE_RE.fullmatch(value[:2]):
        return "must not name a local path"
    segments = [segment for segment in re.split(r"[/#]", path) if segment]
    if any(segment.startswith(".") for segment in segments):
        return "must not name a local path"
    is_url = bool(match and match.group(2).startswith("//"))
    if not is_url and segments and segments[0].lower() in _LOCAL_ROOTS:
        return "must not name a local path"
    if not is_url and credential_like_segment(path.replace("#", "/")):
        return "must not carry credentials"  # a URL's parts: public_https_url's rule
    return None


def public_reference(value: Any, field: str) -> str:
    """An artifact or evidence reference as LoopX accepts it, minus credentials, local
    paths and non-loopback internal hosts; otherwise a public ``https://`` URL."""
    if isinstance(value, str) and APPLICATION_ID_RE.fullmatch(value):
        problem = reference_problem(value)
        if problem is not None:
            raise invalid("invalid_argument", field, f"{field} {problem}.")
        if _SCHEME_RE.fullmatch(value) and value.split(":", 1)[1].startswith("//"):
            return public_https_url(value, field, loopback=True)
        return value
    return public_https_url(value, field)


def _ref_digests(refs: Any, field: str, *, minimum: int, maximum: int) -> list[str]:
    if not isinstance(refs, list | tuple) or not minimum <= len(refs) <= maximum:
        raise invalid(
            "invalid_argument",
            field,
            f"{field} supports at most {maximum} references (at least {minimum}).",
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
    preference_refs: list[str] | tuple[str, ...] | None = None,
    artifact_ref: str | None = None,
) -> dict[str, Any]:
    """The checked fields of a ``semantic_preference_application_receipt_v0`` (returned,
    not written; ``documents.application_receipt(**fields)`` renders it)."""
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
    refs = [] if preference_refs is None else preference_refs
    digests = _ref_digests(
        list(refs) if isinstance(refs, list | tuple) else refs,
        "preference_ref",
        minimum=0,
        maximum=MAX_PREFERENCE_REFS,
    )
    if artifact_ref is not None:
        public_reference(artifact_ref, "artifact_ref")
    return {
        "surface": surface,
        "application_id": application_id,
        "outcome": outcome,
        "artifact_ref": artifact_ref,
        "preference_ref_digests": sorted(digests),
    }


def maintenance_receipt(
    *,
    trigger: str,
    outcome: str,
    corpus_ids: list[str] | tuple[str, ...],
    scope_refs: list[str] | tuple[str, ...] = (),
    evidence_ref: str | None = None,
) -> dict[str, Any]:
    """The checked fields of a ``semantic_preference_maintenance_receipt_v0`` (returned,
    not written; ``documents.maintenance_receipt(**fields)`` renders it)."""
    if trigger not in WRITEBACK_TRIGGERS:
        raise invalid(
            "invalid_argument",
            "trigger",
            "trigger must be explicit_feedback or source_truth_changed.",
        )
    if outcome not in MAINTENANCE_OUTCOMES:
        raise invalid(
            "invalid_argument",
            "outcome",
            "outcome must be verified, no_write_rationale, or failed.",
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
    if evidence_ref is not None:
        public_reference(evidence_ref, "evidence_ref")
    return {
        "trigger": trigger,
        "outcome": outcome,
        "corpus_ids": sorted(set(corpus_ids)),
        "evidence_ref": evidence_ref,
        "scope_ref_digests": sorted(scope_digests),
    }
