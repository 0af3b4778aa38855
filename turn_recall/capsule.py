"""The Turn capsule: failed/partial/unavailable turn-start hook observations, signed.

The signature is HMAC-SHA256 over the canonical JSON of the capsule without its
``signature`` member, with a key derived from ``settings.SECRET_KEY`` and a purpose
string (so the key signs nothing else). The ``signature`` object itself holds exactly
``algorithm`` and ``value``: any other member was added after signing. Any edit of a
signed capsule fails ``verify``. Healthy or disabled hooks never produce a capsule.

A host verifies a capsule it was handed with ``check`` (``manage.py turn
verify-capsule``, ``POST /api/v1/turn-capsules/verify/``): ``valid``, or ``invalid``
with one reason — ``malformed``, ``tampered``, ``expired`` (at or after its
``expires_at``, ``CAPSULE_TTL_SECONDS`` after issue) or ``scope_mismatch`` (signed for
another Goal or Agent). The key and the expected signature never leave this module.
"""

import datetime as dt
import hashlib
import hmac
from typing import Any

from django.conf import settings

from loopx_site.core import clock
from loopx_site.core import selectors as core_selectors
from loopx_site.core.canonical import canonical_bytes
from turn_recall import contracts as c
from turn_recall import documents

PURPOSE = b"loopx.turn_recall.turn_capsule.v0"
ALGORITHM = c.CAPSULE_ALGORITHM
SIGNATURE_MEMBERS = frozenset({"algorithm", "value"})


def _key() -> bytes:
    return hmac.new(settings.SECRET_KEY.encode("utf-8"), PURPOSE, hashlib.sha256).digest()


def _mac(body: dict[str, Any]) -> str:
    return hmac.new(_key(), canonical_bytes(body), hashlib.sha256).hexdigest()


def sign(body: dict[str, Any]) -> dict[str, Any]:
    unsigned = {k: v for k, v in body.items() if k != "signature"}
    return {**unsigned, "signature": {"algorithm": ALGORITHM, "value": _mac(unsigned)}}


def _signature_reason(capsule: Any) -> str | None:
    """``None`` for an unmodified capsule signed by this server's key, else why not."""
    if not isinstance(capsule, dict) or capsule.get("schema_version") != c.CAPSULE_SCHEMA:
        return "malformed"
    signature = capsule.get("signature")
    if not isinstance(signature, dict) or signature.get("algorithm") != ALGORITHM:
        return "malformed"
    value = signature.get("value")
    if not isinstance(value, str):
        return "malformed"
    if set(signature) != SIGNATURE_MEMBERS:
        return "tampered"  # a member the MAC does not cover was added after signing
    unsigned = {k: v for k, v in capsule.items() if k != "signature"}
    try:
        expected = _mac(unsigned)
    except (TypeError, ValueError):
        return "malformed"
    return None if hmac.compare_digest(expected, value) else "tampered"


def verify(capsule: Any) -> bool:
    """True only for an unmodified capsule signed by this server's key."""
    return _signature_reason(capsule) is None


def check(capsule: Any, *, goal_id: str, agent_id: str, now=None) -> str | None:
    """Why ``capsule`` is not valid for this (Goal, Agent) now, or ``None`` when it is:
    the signature first (an edited scope or expiry is ``tampered``), then the expiry,
    then the scope."""
    reason = _signature_reason(capsule)
    if reason is not None:
        return reason
    try:
        expires = clock.parse_iso_z(capsule["expires_at"])
    except (KeyError, TypeError, ValueError):
        return "malformed"  # a signed capsule from before expiries existed
    if (now or clock.now()) >= expires:
        return "expired"
    if (capsule.get("goal_id"), capsule.get("agent_id")) != (goal_id, agent_id):
        return "scope_mismatch"
    return None


def verification(capsule: Any, *, goal_id: str, agent_id: str) -> dict[str, Any]:
    """``loopx_turn_capsule_verification_v0`` for one capsule (read-only), for a
    registered Agent (``goal_/agent_not_registered``, 404, otherwise)."""
    core_selectors.get_agent(goal_id, agent_id, area=c.AREA)
    reason = check(capsule, goal_id=goal_id, agent_id=agent_id)
    scoped = isinstance(capsule, dict) and reason != "malformed"
    return documents.capsule_verification(
        goal_id=goal_id,
        agent_id=agent_id,
        reason=reason,
        capsule_goal_id=capsule.get("goal_id") if scoped else None,
        capsule_agent_id=capsule.get("agent_id") if scoped else None,
        expires_at=capsule.get("expires_at") if scoped else None,
    )


def build(*, goal_id: str, agent_id: str, issued_at: str, failures: list[dict]) -> dict | None:
    """A signed capsule for the failed hooks, or ``None`` when every hook was healthy."""
    if not failures:
        return None
    expires = clock.parse_iso_z(issued_at) + dt.timedelta(seconds=c.CAPSULE_TTL_SECONDS)
    return sign(
        documents.capsule_body(
            goal_id=goal_id,
            agent_id=agent_id,
            issued_at=issued_at,
            expires_at=clock.iso(expires),
            failures=failures,
        )
    )
