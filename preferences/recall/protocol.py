"""``semantic_preference_provider_v0``: request, response and inventory validation, and the
derivation of ``semantic_preference_maintenance_guidance_v0``.

Validation is strict and reduces every defect to one bounded failure kind; nothing of a
rejected response (text, field values, sizes) is echoed.
"""

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from loopx_site.core.canonical import canonical_bytes, canonical_size
from loopx_site.core.files import json_depth_exceeds

PROTOCOL = "semantic_preference_provider_v0"
REQUEST_SCHEMA = "semantic_preference_provider_request_v0"
RESPONSE_SCHEMA = "semantic_preference_provider_response_v0"
GUIDANCE_SCHEMA = "semantic_preference_maintenance_guidance_v0"
PROVIDER_DOCTOR_SCHEMA = "semantic_preference_provider_doctor_v0"

INVALID_JSON = "invalid_json"
INVALID_RESPONSE = "invalid_response"
ITEM_TOO_LARGE = "item_too_large"
INVALID_CORPUS_INVENTORY = "invalid_corpus_inventory"
MAX_RESPONSE_DEPTH = 64

#: Every failure kind the hook reports, bounded and stable.
FAILURE_KINDS = (
    "extension_binding_unavailable",
    "execution_failed",
    "timed_out",
    "nonzero_exit",
    "response_too_large",
    INVALID_JSON,
    INVALID_RESPONSE,
    ITEM_TOO_LARGE,
    INVALID_CORPUS_INVENTORY,
)

MAX_ITEM_BYTES = 8_000
MAX_REF_CHARS = 1024
MAX_INVENTORY_ENTRIES = 20
WRITEBACK_TRIGGERS = ("explicit_feedback", "source_truth_changed")
READ_ROLES = ("primary", "fallback", "reference")
WRITE_MODES = ("read_only", "provider_managed")
CLOSURE_POLICIES = ("none", "write_wait_l2_read_scoped_recall")
MAINTENANCE_OUTCOMES = ("verified", "no_write_rationale", "failed")
GUIDANCE_OUTCOMES = ("verified", "no_write_rationale")
GUIDANCE_COMPLETION = "provider_write_then_wait_l2_read_and_scoped_recall"
#: Corpus ids: LoopX's lower-snake tokens (inventories and maintenance receipts).
INVENTORY_CORPUS_ID_RE = re.compile(r"[a-z][a-z0-9_-]{0,63}")
#: A corpus id in a maintenance receipt: LoopX's rule (lower case, starting with a letter,
#: no dots), the same as an inventory's.
CORPUS_ID_RE = INVENTORY_CORPUS_ID_RE


class ProtocolFailure(Exception):
    """A response defect, carrying only its failure kind."""

    def __init__(self, kind: str):
        super().__init__(kind)
        self.kind = kind


def ref_digest(ref: str) -> str:
    """The 16-hex-char sha256 prefix that stands for a provider-owned reference."""
    return hashlib.sha256(ref.encode("utf-8")).hexdigest()[:16]


def request_document(
    *, surface: str, query: str, limit: int, context: dict[str, str]
) -> dict[str, Any]:
    """The ``semantic_preference_provider_request_v0`` object: exactly these five keys.

    The preview echoes it as ``request``; the provider receives the same object on stdin.
    """
    return {
        "schema_version": REQUEST_SCHEMA,
        "surface": surface,
        "query": query,
        "limit": limit,
        "context": dict(context),
    }


def response_document(
    items: list[dict[str, Any]], inventory: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A provider's ``semantic_preference_provider_response_v0`` (what it prints)."""
    response: dict[str, Any] = {"schema_version": RESPONSE_SCHEMA, "items": items}
    if inventory is not None:
        response["corpus_inventory"] = inventory
    return response


def provider_doctor_document(
    *, schema: str = PROVIDER_DOCTOR_SCHEMA, **fields: Any
) -> dict[str, Any]:
    """A provider's own doctor report (what its doctor command prints): the built-in
    provider's ``semantic_preference_provider_doctor_v0`` (``extension_id``, ``healthy``,
    its detail) or a shipped extension's own report schema."""
    return {"schema_version": schema, **fields}


def encode_request(request: dict[str, Any]) -> bytes:
    return canonical_bytes(request) + b"\n"


@dataclass(frozen=True)
class ParsedResponse:
    items: list[dict[str, Any]]
    truncated: bool
    inventory: list[dict[str, Any]]


#: LoopX's public-safe reference (``public_safe_text.PUBLIC_SAFE_REFERENCE_PATTERN``): what
#: an inventory's ``scope_ref``, ``write_actor_ref`` and ``source_of_truth`` may be.
REFERENCE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/#-]{0,199}")


def _is_reference(value: Any) -> bool:
    return isinstance(value, str) and REFERENCE_RE.fullmatch(value) is not None


def parse_response(stdout: bytes, *, limit: int) -> ParsedResponse:
    """Validate one provider response; raise ``ProtocolFailure`` with the failure kind.

    Items are passed through (extra fields kept) once each of the first ``limit`` is an
    object with string ``preference_ref`` and ``summary`` and at most ``MAX_ITEM_BYTES``
    serialized; items beyond ``limit`` are dropped (``truncated``). Unknown top-level
    fields of the response are ignored.
    """
    try:
        text = stdout.decode("utf-8")
        if json_depth_exceeds(text, MAX_RESPONSE_DEPTH):
            raise ProtocolFailure(INVALID_JSON)
        document = json.loads(text, parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ProtocolFailure(INVALID_JSON) from None
    if not isinstance(document, dict) or document.get("schema_version") != RESPONSE_SCHEMA:
        raise ProtocolFailure(INVALID_RESPONSE)
    raw_items = document.get("items")
    if not isinstance(raw_items, list) or not all(isinstance(i, dict) for i in raw_items):
        raise ProtocolFailure(INVALID_RESPONSE)
    bounded = raw_items[:limit]
    for item in bounded:
        if canonical_size(item) > MAX_ITEM_BYTES:
            raise ProtocolFailure(ITEM_TOO_LARGE)
        if not isinstance(item.get("preference_ref"), str) or not isinstance(
            item.get("summary"), str
        ):
            raise ProtocolFailure(INVALID_RESPONSE)
    inventory = validate_inventory(document.get("corpus_inventory"))
    return ParsedResponse(
        items=[dict(i) for i in bounded], truncated=len(raw_items) > limit, inventory=inventory
    )


def _reject_constant(name: str):
    raise ValueError(name)


def validate_inventory(raw: Any) -> list[dict[str, Any]]:
    """Validate ``corpus_inventory`` (absent → ``[]``) and return LoopX's normalized
    entries; raises ``ProtocolFailure(invalid_corpus_inventory)``."""
    if raw is None:
        return []
    if not isinstance(raw, list) or len(raw) > MAX_INVENTORY_ENTRIES:
        raise ProtocolFailure(INVALID_CORPUS_INVENTORY)
    entries = []
    seen = set()
    for entry in raw:
        if not isinstance(entry, dict):
            raise ProtocolFailure(INVALID_CORPUS_INVENTORY)
        corpus_id = entry.get("corpus_id")
        if (
            not isinstance(corpus_id, str)
            or not INVENTORY_CORPUS_ID_RE.fullmatch(corpus_id)
            or corpus_id in seen
        ):
            raise ProtocolFailure(INVALID_CORPUS_INVENTORY)
        seen.add(corpus_id)
        scope_ref = entry.get("scope_ref")
        actor = entry.get("write_actor_ref")
        source = entry.get("source_of_truth")
        closure = entry.get("closure_policy") or "none"
        triggers = entry.get("writeback_triggers") or []
        if (
            not _is_reference(scope_ref)
            or (actor not in (None, "") and not _is_reference(actor))
            or entry.get("read_role") not in READ_ROLES
            or entry.get("write_mode") not in WRITE_MODES
            or closure not in CLOSURE_POLICIES
            or not _is_reference(source)
            or not isinstance(triggers, list)
            or any(t not in WRITEBACK_TRIGGERS for t in triggers)
        ):
            raise ProtocolFailure(INVALID_CORPUS_INVENTORY)
        entries.append(
            {
                "corpus_id": corpus_id,
                "scope_ref": scope_ref,
                "read_role": entry["read_role"],
                "write_mode": entry["write_mode"],
                "write_actor_ref": actor or None,
                "source_of_truth": source,
                "writeback_triggers": sorted(set(triggers)),
                "closure_policy": closure,
            }
        )
    return entries


def maintenance_guidance(inventory: list[dict[str, Any]]) -> dict[str, Any] | None:
    """LoopX's ``semantic_preference_maintenance_guidance_v0`` for the writable corpora
    of a validated inventory (``None`` when every corpus is read-only or none was sent).

    It names corpora and triggers only — never scope refs or content.
    """
    writable = [e for e in inventory if e["write_mode"] != "read_only"]
    if not writable:
        return None
    return {
        "schema_version": GUIDANCE_SCHEMA,
        "corpus_ids": [e["corpus_id"] for e in writable],
        "writeback_triggers": sorted({t for e in writable for t in e["writeback_triggers"]}),
        "closure_outcomes": list(GUIDANCE_OUTCOMES),
        "completion": GUIDANCE_COMPLETION,
    }
