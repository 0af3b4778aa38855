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

PROTOCOL = "semantic_preference_provider_v0"
REQUEST_SCHEMA = "semantic_preference_provider_request_v0"
RESPONSE_SCHEMA = "semantic_preference_provider_response_v0"
DOCTOR_REQUEST_SCHEMA = "semantic_preference_provider_doctor_request_v0"
GUIDANCE_SCHEMA = "semantic_preference_maintenance_guidance_v0"

INVALID_JSON = "invalid_json"
INVALID_RESPONSE = "invalid_response"
ITEM_TOO_LARGE = "item_too_large"
INVALID_CORPUS_INVENTORY = "invalid_corpus_inventory"

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
MAX_SUMMARY_CHARS = MAX_ITEM_BYTES  # bounded by the serialized item size
MAX_INVENTORY_ENTRIES = 32
RESPONSE_FIELDS = {"schema_version", "items", "corpus_inventory"}
ITEM_FIELDS = {"preference_ref", "summary"}
INVENTORY_FIELDS = {
    "corpus_id",
    "scope_ref",
    "read_role",
    "write_mode",
    "write_actor_ref",
    "source_of_truth",
    "writeback_triggers",
    "closure_policy",
}
WRITEBACK_TRIGGERS = ("explicit_feedback", "source_truth_changed")
MAINTENANCE_OUTCOMES = ("verified", "no_write_rationale")
CORPUS_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
TOKEN_RE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
MAX_TOKEN_CHARS = 64


class ProtocolFailure(Exception):
    """A response defect, carrying only its failure kind."""

    def __init__(self, kind: str):
        super().__init__(kind)
        self.kind = kind


def ref_digest(ref: str) -> str:
    """The 16-hex-char sha256 prefix that stands for a provider-owned reference."""
    return hashlib.sha256(ref.encode("utf-8")).hexdigest()[:16]


def build_request(
    *, surface: str, query: str, limit: int, context: dict[str, str], project: str
) -> bytes:
    """One ``semantic_preference_provider_request_v0`` object as canonical JSON + newline."""
    body = {
        "schema_version": REQUEST_SCHEMA,
        "protocol": PROTOCOL,
        "surface": surface,
        "query": query,
        "limit": limit,
        "context": context,
        "project_ref": project,
    }
    return canonical_bytes(body) + b"\n"


def build_doctor_request(*, project: str) -> bytes:
    body = {"schema_version": DOCTOR_REQUEST_SCHEMA, "protocol": PROTOCOL, "project_ref": project}
    return canonical_bytes(body) + b"\n"


@dataclass(frozen=True)
class ParsedResponse:
    items: list[dict[str, str]]
    truncated: bool
    inventory: list[dict[str, Any]] | None


def _is_text(value: Any, max_chars: int) -> bool:
    return isinstance(value, str) and 1 <= len(value) <= max_chars and "\x00" not in value


def parse_response(stdout: bytes, *, limit: int) -> ParsedResponse:
    """Validate one provider response; raise ``ProtocolFailure`` with the failure kind."""
    try:
        document = json.loads(stdout.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ProtocolFailure(INVALID_JSON) from None
    if not isinstance(document, dict):
        raise ProtocolFailure(INVALID_RESPONSE)
    if set(document) - RESPONSE_FIELDS or document.get("schema_version") != RESPONSE_SCHEMA:
        raise ProtocolFailure(INVALID_RESPONSE)
    raw_items = document.get("items")
    if not isinstance(raw_items, list):
        raise ProtocolFailure(INVALID_RESPONSE)
    items = []
    for item in raw_items:
        if canonical_size(item) > MAX_ITEM_BYTES:
            raise ProtocolFailure(ITEM_TOO_LARGE)
        if (
            not isinstance(item, dict)
            or set(item) != ITEM_FIELDS
            or not _is_text(item["preference_ref"], MAX_REF_CHARS)
            or not _is_text(item["summary"], MAX_SUMMARY_CHARS)
        ):
            raise ProtocolFailure(INVALID_RESPONSE)
        items.append({"preference_ref": item["preference_ref"], "summary": item["summary"]})
    inventory = None
    if "corpus_inventory" in document:
        inventory = validate_inventory(document["corpus_inventory"])
    truncated = len(items) > limit
    return ParsedResponse(items=items[:limit], truncated=truncated, inventory=inventory)


def _reject_constant(name: str):
    raise ValueError(name)


def validate_inventory(raw: Any) -> list[dict[str, Any]]:
    """Validate ``corpus_inventory`` (raises ``ProtocolFailure(invalid_corpus_inventory)``)."""
    if not isinstance(raw, list) or len(raw) > MAX_INVENTORY_ENTRIES:
        raise ProtocolFailure(INVALID_CORPUS_INVENTORY)
    entries = []
    seen = set()
    for entry in raw:
        if not isinstance(entry, dict) or set(entry) != INVENTORY_FIELDS:
            raise ProtocolFailure(INVALID_CORPUS_INVENTORY)
        corpus_id = entry["corpus_id"]
        if not isinstance(corpus_id, str) or not CORPUS_ID_RE.fullmatch(corpus_id):
            raise ProtocolFailure(INVALID_CORPUS_INVENTORY)
        for ref_field in ("scope_ref", "write_actor_ref"):
            if not _is_text(entry[ref_field], MAX_REF_CHARS):
                raise ProtocolFailure(INVALID_CORPUS_INVENTORY)
        for token_field in ("read_role", "write_mode", "source_of_truth", "closure_policy"):
            value = entry[token_field]
            if (
                not isinstance(value, str)
                or len(value) > MAX_TOKEN_CHARS
                or not TOKEN_RE.fullmatch(value)
            ):
                raise ProtocolFailure(INVALID_CORPUS_INVENTORY)
        triggers = entry["writeback_triggers"]
        if (
            not isinstance(triggers, list)
            or not triggers
            or len(set(map(str, triggers))) != len(triggers)
            or any(t not in WRITEBACK_TRIGGERS for t in triggers)
        ):
            raise ProtocolFailure(INVALID_CORPUS_INVENTORY)
        key = (corpus_id, entry["scope_ref"])
        if key in seen:
            raise ProtocolFailure(INVALID_CORPUS_INVENTORY)
        seen.add(key)
        entries.append(dict(entry))
    return entries


def maintenance_guidance(inventory: list[dict[str, Any]]) -> dict[str, Any]:
    """Derive ``semantic_preference_maintenance_guidance_v0`` from a validated inventory.

    One entry per corpus id. Entries of one corpus must agree on their read role, write
    mode, source of truth, triggers and closure policy (else the inventory is invalid);
    their scope refs are merged as digests. Raw refs never appear.
    """
    corpora: dict[str, dict[str, Any]] = {}
    for entry in inventory:
        policy = {
            "read_role": entry["read_role"],
            "write_mode": entry["write_mode"],
            "source_of_truth": entry["source_of_truth"],
            "writeback_triggers": sorted(entry["writeback_triggers"]),
            "closure_policy": entry["closure_policy"],
        }
        current = corpora.get(entry["corpus_id"])
        if current is None:
            corpora[entry["corpus_id"]] = {
                "corpus_id": entry["corpus_id"],
                **policy,
                "scope_ref_digests": [ref_digest(entry["scope_ref"])],
            }
            continue
        if any(current[k] != v for k, v in policy.items()):
            raise ProtocolFailure(INVALID_CORPUS_INVENTORY)
        current["scope_ref_digests"].append(ref_digest(entry["scope_ref"]))
    ordered = []
    for corpus_id in sorted(corpora):
        corpus = corpora[corpus_id]
        corpus["scope_ref_digests"] = sorted(set(corpus["scope_ref_digests"]))
        ordered.append(corpus)
    triggers = sorted({t for c in ordered for t in c["writeback_triggers"]})
    return {
        "schema_version": GUIDANCE_SCHEMA,
        "corpora": ordered,
        "triggers": triggers,
        "outcomes": list(MAINTENANCE_OUTCOMES),
        "instructions": [
            "After explicit feedback or a source-of-truth change, assess each listed corpus "
            "whose writeback_triggers include that trigger; not every corpus must be "
            "rewritten.",
            "Either perform the provider-owned update and verify its closure_policy, or "
            "record a no_write_rationale.",
            "Record the decision with `semantic_preference maintenance-receipt --trigger T "
            "--outcome verified|no_write_rationale --corpus-id C [--scope-ref R] "
            "[--evidence-ref E]`; LoopX does not infer semantic updates.",
        ],
    }
