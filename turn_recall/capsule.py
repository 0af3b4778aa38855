"""The Turn capsule: failed/partial/unavailable turn-start hook observations, signed.

The signature is HMAC-SHA256 over the canonical JSON of the capsule without its
``signature`` member, with a key derived from ``settings.SECRET_KEY`` and a purpose
string (so the key signs nothing else). Any edit of a signed capsule fails
``verify``. Healthy or disabled hooks never produce a capsule.
"""

import hashlib
import hmac
from typing import Any

from django.conf import settings

from loopx_site.core.canonical import canonical_bytes
from turn_recall import contracts as c

PURPOSE = b"loopx.turn_recall.turn_capsule.v0"
ALGORITHM = "HMAC-SHA256"


def _key() -> bytes:
    return hmac.new(settings.SECRET_KEY.encode("utf-8"), PURPOSE, hashlib.sha256).digest()


def _mac(body: dict[str, Any]) -> str:
    return hmac.new(_key(), canonical_bytes(body), hashlib.sha256).hexdigest()


def sign(body: dict[str, Any]) -> dict[str, Any]:
    unsigned = {k: v for k, v in body.items() if k != "signature"}
    return {**unsigned, "signature": {"algorithm": ALGORITHM, "value": _mac(unsigned)}}


def verify(capsule: Any) -> bool:
    """True only for an unmodified capsule signed by this server's key."""
    if not isinstance(capsule, dict):
        return False
    signature = capsule.get("signature")
    if not isinstance(signature, dict) or signature.get("algorithm") != ALGORITHM:
        return False
    value = signature.get("value")
    if not isinstance(value, str):
        return False
    unsigned = {k: v for k, v in capsule.items() if k != "signature"}
    try:
        expected = _mac(unsigned)
    except (TypeError, ValueError):
        return False
    return hmac.compare_digest(expected, value)


def build(*, goal_id: str, agent_id: str, issued_at: str, failures: list[dict]) -> dict | None:
    """A signed capsule for the failed hooks, or ``None`` when every hook was healthy."""
    if not failures:
        return None
    return sign(
        {
            "schema_version": c.CAPSULE_SCHEMA,
            "goal_id": goal_id,
            "agent_id": agent_id,
            "issued_at": issued_at,
            "observations": [
                {
                    "hook_id": f["hook_id"],
                    "capability_id": f.get("capability_id"),
                    "status": f["status"],
                    "error_code": f.get("error_code"),
                    "read_command": f.get("read_command"),
                    "invalidates_cached_context": True,
                    "held_actions": f.get("held_actions"),
                }
                for f in failures
            ],
            "independent_work": "keeps_existing_permissions",
            "grants_capability_permissions": False,
            "retry_failed_providers": False,
        }
    )
