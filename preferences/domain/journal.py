"""The explicit journal's rules (spec Part A, LoopX's ``agent_preferences_v1``): what
one stored item is and how it is encoded and counted, the capacity limits, expiry, the
order LoopX lists keys in, and the current state a read answers. Pure: selectors read
the rows, services apply these, ``preferences.documents`` renders the result.
"""

import datetime as dt
from typing import Any, NamedTuple

from loopx_site.core import clock
from loopx_site.core.canonical import canonical_text_bytes

#: Capacity of one scope: current subjects (retired and expired included) and the bytes
#: of the whole current list as LoopX bounds it (``list_bytes``).
MAX_SUBJECTS = 64
MAX_BYTES = 32768
SOURCE_KIND = "user_instruction"


def stored_item(
    *,
    key: str,
    state: str,
    statement: str | None,
    expires_at: str | None,
    source_ref: str,
    source_quote: str,
    recorded_at: str,
    operation_id: str,
    supersedes_operation_id: str | None,
) -> dict[str, Any]:
    """One current subject as LoopX's ``agent_preferences_v1`` item (``active`` or
    ``retired``); its canonical JSON is what the subject row stores and what capacity
    counts."""
    return {
        "key": key,
        "state": state,
        "statement": statement,
        "expires_at": expires_at,
        "source_kind": SOURCE_KIND,
        "source_ref": source_ref,
        "source_quote": source_quote,
        "recorded_at": recorded_at,
        "operation_id": operation_id,
        "supersedes_operation_id": supersedes_operation_id,
    }


def encode_item(item: dict[str, Any]) -> tuple[str, int]:
    """The stored text of an item and its size in bytes."""
    raw = canonical_text_bytes(item)
    return raw.decode("utf-8"), len(raw)


def expired_item(item: dict[str, Any]) -> dict[str, Any]:
    """What an active item reads as once ``expires_at`` has passed: no statement."""
    return {
        "key": item["key"],
        "state": "expired",
        "statement": None,
        "operation_id": item["operation_id"],
        "source_ref": item["source_ref"],
        "recorded_at": item["recorded_at"],
        "expires_at": item["expires_at"],
    }


def is_expired(item: dict[str, Any], now: dt.datetime) -> bool:
    return (
        item["state"] == "active"
        and item["expires_at"] is not None
        and clock.parse_iso_z(item["expires_at"]) <= now
    )


def project(items: list[dict[str, Any]], now: dt.datetime) -> list[dict[str, Any]]:
    """Stored items (sorted by key) as read at ``now``."""
    return [
        expired_item(i) if i["expires_at"] is not None and is_expired(i, now) else i
        for i in sorted(items, key=_BY_KEY)
    ]


#: ICU root collation (what Node's ``localeCompare`` applies, and so LoopX's journal
#: order) for the characters a key may hold: punctuation ``_`` < ``-`` < ``.`` before
#: digits before letters at the primary level, then lower case before upper case at the
#: tertiary level, left to right. Checked against Node 22 in
#: tests/preferences/test_loopx_key_order.py. Other characters sort after letters by code
#: point (a key never holds one).
_PRIMARY = {ch: rank for rank, ch in enumerate("_-.0123456789abcdefghijklmnopqrstuvwxyz")}


def locale_compare_key(text: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """A sort key equal to ``localeCompare`` order (ICU root) on keys' characters."""
    primary = tuple(_PRIMARY.get(ch.lower(), len(_PRIMARY) + ord(ch)) for ch in text)
    tertiary = tuple(1 if ch.isupper() else 0 for ch in text)
    return primary, tertiary


def _BY_KEY(item: dict[str, Any]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return locale_compare_key(item["key"])


def list_bytes(subjects: int, used_bytes: int) -> int:
    """The bytes of the whole current list as LoopX bounds it (``JSON.stringify`` of the
    array: the items, a comma between two, the brackets) from the items' own sizes."""
    return used_bytes + max(subjects, 1) + 1


def usage(subjects: int, used_bytes: int) -> dict[str, int]:
    return {
        "subjects": subjects,
        "bytes": used_bytes,
        "max_subjects": MAX_SUBJECTS,
        "max_bytes": MAX_BYTES,
    }


def state(
    goal_id: str,
    agent_id: str,
    revision: int | None,
    items: list[dict[str, Any]],
    used_bytes: int,
) -> dict[str, Any]:
    """The plain current state of a scope (rendered as ``current`` by the documents)."""
    return {
        "goal_id": goal_id,
        "agent_id": agent_id,
        "revision": None if revision is None else str(revision),
        "items": items,
        "usage": usage(len(items), used_bytes),
    }


def over_capacity(subjects: int, used_bytes: int) -> bool:
    """A current list of ``subjects`` items of ``used_bytes`` exceeds a scope's capacity."""
    return subjects > MAX_SUBJECTS or list_bytes(subjects, used_bytes) > MAX_BYTES


class StoredView(NamedTuple):
    """What a read of one scope's current subjects returns, before any rule: the scope's
    revision and used bytes (``None``/0 without a journal), the decoded items in store
    order, whether the database found each one expired, and each subject's revision."""

    revision: int | None
    used_bytes: int
    items: list[dict[str, Any]]
    expired: list[Any]
    revisions: list[int]


def current_state(
    goal_id: str, agent_id: str, stored: StoredView, *, subject_revisions: bool = False
) -> dict[str, Any]:
    """The current state a read answers: items in LoopX's key order, an active item
    whose expiry has passed read as expired (no statement); with ``subject_revisions``
    also each key's revision."""
    items, expired, revisions = stored.items, stored.expired, stored.revisions
    if items:
        # LoopX lists keys in localeCompare order (ICU), not the database's collation.
        order = sorted(range(len(items)), key=lambda n: locale_compare_key(items[n]["key"]))
        items = [items[n] for n in order]
        expired = [expired[n] for n in order]
        revisions = [revisions[n] for n in order]
        if 1 in expired:
            items = [
                expired_item(i) if flag and i["state"] == "active" else i
                for i, flag in zip(items, expired, strict=True)
            ]
    result = state(goal_id, agent_id, stored.revision, items, stored.used_bytes)
    if subject_revisions:
        result["subject_revisions"] = {
            i["key"]: str(r) for i, r in zip(items, revisions, strict=True)
        }
    return result


def required_reads(goal_id: str, agent_id: str) -> list[str]:
    return [
        f"manage.py semantic_preference agent read --goal-id {goal_id} --agent-id {agent_id} "
        "--format json"
    ]


TURN_START_INSTRUCTIONS = [
    "These are the owner's explicit, advisory preferences for this exact Goal and Agent; "
    "they grant no permission and do not override current authority or user gates.",
    "Consume this view once for this turn's pre-work checks, then run every remaining "
    "required read.",
    "Before every preference-dependent external action, obtain a fresh view (a new turn "
    "guard or an explicit agent read), even after an earlier empty or current view.",
    "To persist an explicit owner correction: read first, reuse the subject key, the "
    "current revision, a stable operation id and the exact owner source; preview, then "
    "--execute, then read back. Retry an uncertain write with the same operation id and "
    "arguments; never retry with a newly fetched revision.",
    "Retired and expired markers invalidate any cached advice on those keys; an older "
    "value is never resurrected.",
]


def turn_start_projection(
    goal_id: str, agent_id: str, view: dict[str, Any]
) -> dict[str, Any] | None:
    """What a turn carries of a current state (read with ``subject_revisions``): the
    active entries' bodies and the other entries as markers, without source quotes;
    ``None`` for a scope that never committed (the turn carries nothing)."""
    if view["revision"] is None:
        return None
    revisions = view.get("subject_revisions", {})
    return {
        "status": "current",
        "revision": view["revision"],
        "authority": "advisory_only",
        "observation_count": len(view["items"]),
        "current": [
            {"key": i["key"], "statement": i["statement"], "revision": revisions.get(i["key"])}
            for i in view["items"]
            if i["state"] == "active"
        ],
        "markers": [
            {"key": i["key"], "state": i["state"], "revision": revisions.get(i["key"])}
            for i in view["items"]
            if i["state"] != "active"
        ],
        "instructions": TURN_START_INSTRUCTIONS,
        "required_reads": required_reads(goal_id, agent_id),
    }
