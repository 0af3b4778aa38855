"""Canonical JSON and digests: the one way the project derives stable identities.

Canonical JSON is sorted keys, ``(",", ":")`` separators, UTF-8 (no ASCII escaping)
and no NaN/Infinity. Every identity in the project (dispatch ids, intent ids,
candidate refs, fingerprints, recall ids, request digests) is a sha256 of exactly
this encoding of the fields the seed names.
"""

import hashlib
import json
import unicodedata
from typing import Any

import orjson


def canonical_bytes(value: Any) -> bytes:
    """Encode ``value`` as canonical JSON bytes; raises ``ValueError`` for NaN/Inf."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


# orjson writes exactly the canonical bytes for strings, None, booleans, 64-bit integers,
# lists and string-keyed dicts (sorted keys, compact, UTF-8, the same escapes); floats are
# written differently (``1e16`` vs ``1e+16``), so only float-free values take this path.
# Datetimes, dataclasses and subclasses are refused, as ``json`` refuses them.
_ORJSON_CANONICAL = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def canonical_text_bytes(value: Any) -> bytes:
    """``canonical_bytes`` of a value holding no floats (text records such as journal
    intents and items), several times faster; byte-for-byte equal, which
    ``tests/core/test_canonical.py`` checks over every code point."""
    return orjson.dumps(value, option=_ORJSON_CANONICAL)


def canonical_json(value: Any) -> str:
    return canonical_bytes(value).decode("utf-8")


def sha256_hex(value: Any) -> str:
    """Hex sha256 of the canonical JSON of ``value``."""
    return hashlib.sha256(canonical_bytes(value)).hexdigest()


def sha256_text(text: str) -> str:
    """Hex sha256 of a plain UTF-8 string (not JSON-encoded)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def digest_ref(value: Any) -> str:
    """``sha256:<hex>`` reference of the canonical JSON of ``value``."""
    return "sha256:" + sha256_hex(value)


def text_digest_ref(text: str) -> str:
    """``sha256:<hex>`` reference of a plain string (used instead of private refs)."""
    return "sha256:" + sha256_text(text)


def prefixed_id(prefix: str, value: Any) -> str:
    """A stable identity: ``prefix`` + sha256 of canonical JSON (e.g. ``pwh_…``)."""
    return prefix + sha256_hex(value)


def nfc(value: Any) -> Any:
    """Return ``value`` with every string (keys included) in Unicode NFC form."""
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value)
    if isinstance(value, dict):
        return {nfc(k): nfc(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [nfc(v) for v in value]
    return value


def canonical_size(value: Any) -> int:
    """Byte length of the canonical JSON encoding of ``value``."""
    return len(canonical_bytes(value))
