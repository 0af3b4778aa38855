"""The turn situation, its fingerprint, the turn recall id and the recall query.

``agent_turn_situation_v0`` is built only from the quota decision packet the host used
for routing (consumed as-is; status is never rebuilt) and the caller's identities. It
never includes a user prompt.

* ``situation_fingerprint`` = ``sha256:`` + sha256 of the canonical JSON of the
  material fields (everything in the situation except the turn instance id);
* ``turn_recall_id`` = ``"tr_"`` + sha256 of canonical
  ``{situation_fingerprint, turn_instance_id}``.

A changed Todo, target, phase or intent changes the fingerprint; a new turn instance
id changes only the recall id.
"""

import re
from typing import Any

from loopx_site.core.canonical import digest_ref, prefixed_id, text_digest_ref
from turn_recall import contracts as c
from turn_recall import documents
from turn_recall.errors import error

_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")
_SPACE = re.compile(r"\s+")
TODO_FIELDS = ("todo_id", "title", "phase", "target_key", "action_kind")


def compact(value: Any, limit: int = c.MAX_TEXT) -> str | None:
    """A bounded one-line string, or ``None`` for empty/non-scalar values."""
    if value is None or isinstance(value, bool | dict | list):
        return None
    text = _SPACE.sub(" ", _CONTROL.sub(" ", str(value))).strip()
    return text[:limit] or None


def _invalid(message: str) -> Exception:
    return error("invalid_packet", message, field="quota_decision")


def _mismatch(what: str) -> Exception:
    return error(
        "packet_mismatch",
        f"The quota decision was built for another {what}.",
        field="quota_decision",
    )


def packet_identity(packet: Any) -> tuple[str, str]:
    """(goal_id, agent_id) the packet was built for; malformed → ``invalid_packet``."""
    if not isinstance(packet, dict):
        raise _invalid("The quota decision must be a JSON object.")
    goal_id = packet.get("goal_id")
    identity = packet.get("agent_identity")
    agent_id = packet.get("agent_id")
    if agent_id is None and isinstance(identity, dict):
        agent_id = identity.get("agent_id")
    if not isinstance(goal_id, str) or not goal_id:
        raise _invalid("The quota decision has no goal_id.")
    if not isinstance(agent_id, str) or not agent_id:
        raise _invalid("The quota decision has no agent_id.")
    return goal_id, agent_id


def _claims(packet: dict) -> list[str]:
    """The projects a packet claims (ours: ``project``; LoopX's form: ``project_ref``,
    where ``repository:<name>`` names the project ``<name>``)."""
    claims = []
    for key in ("project", "project_ref"):
        value = compact(packet.get(key), 160)
        if value is not None:
            claims.append(value.removeprefix("repository:"))
    return claims


def packet_project(packet: dict) -> str | None:
    """The project a packet claims, if any."""
    claims = _claims(packet)
    return claims[0][:128] if claims else None


def check_packet(packet: Any, goal_id: str, agent_id: str, turn_id=None, project=None) -> dict:
    """Validate the packet's shape and that it was built for exactly this Goal, Agent,
    turn and project — before any provider call.

    Both our ``loopx_quota_decision_v0`` and the packet real ``loopx quota should-run``
    prints are accepted: a ``mode`` other than ``should-run`` is ``invalid_packet``; a
    ``heartbeat_receipt`` (LoopX) or ``turn_instance_id`` (ours, when asked for one
    turn) naming another turn, or a project other than the turn-admission corpus's, is
    ``packet_mismatch``; a heartbeat receipt that is not committed is ``invalid_packet``.
    """
    if isinstance(packet, dict) and "mode" in packet and packet["mode"] != c.QUOTA_MODE:
        raise _invalid("The quota decision must be one quota should-run packet.")
    got_goal, got_agent = packet_identity(packet)
    if (got_goal, got_agent) != (goal_id, agent_id):
        raise _mismatch("Goal or Agent")
    receipt = packet.get("heartbeat_receipt")
    if receipt is not None and not isinstance(receipt, dict):
        raise _invalid("heartbeat_receipt must be an object.")
    turns = [packet.get("turn_instance_id"), (receipt or {}).get("turn_instance_id")]
    if receipt is not None and turns[1] is None:
        raise _invalid("heartbeat_receipt has no turn_instance_id.")
    if turn_id is not None and any(t is not None and t != turn_id for t in turns):
        raise _mismatch("turn")
    if receipt is not None and receipt.get("status") not in c.HEARTBEAT_STATUSES:
        raise _invalid("The quota decision's heartbeat receipt is not committed.")
    if project is not None and any(claim != project for claim in _claims(packet)):
        raise _mismatch("project")
    todo = packet.get("selected_todo")
    if todo is not None and not isinstance(todo, dict):
        raise _invalid("selected_todo must be an object or null.")
    outcomes = packet.get("recent_outcomes")
    if outcomes is not None and not isinstance(outcomes, list):
        raise _invalid("recent_outcomes must be a list.")
    return packet


def _selected(packet: dict) -> dict:
    todo = packet.get("selected_todo") or {}
    out = {}
    for key in TODO_FIELDS:
        value = compact(todo.get(key))
        if value is not None:
            out[key] = value
    text = compact(todo.get("text"))
    if text and "title" not in out:
        out["title"] = text
    return out


def _outcomes(packet: dict) -> list[str]:
    refs: list[str] = []
    for item in packet.get("recent_outcomes") or []:
        if isinstance(item, dict):
            item = item.get("ref") or ":".join(
                str(item[k]) for k in ("event_kind", "todo_id") if item.get(k)
            )
        ref = compact(item, 180)
        if ref and ref not in refs:
            refs.append(ref)
        if len(refs) >= c.MAX_RECENT_OUTCOMES:
            break
    return refs


def build(
    packet: dict,
    *,
    goal_id: str,
    agent_id: str,
    turn_instance_id: str,
    project: str | None = None,
    session_ref: str | None = None,
) -> dict:
    """``agent_turn_situation_v0`` with its fingerprint and turn recall id. ``project``
    is the turn-admission corpus's (as LoopX takes it from the corpus scope); without
    one, the packet's own claim."""
    selected = _selected(packet)
    material = documents.situation(
        goal_id=goal_id,
        agent_id=agent_id,
        project=project if project is not None else packet_project(packet),
        selected_todo=selected,
        phase=compact(packet.get("lifecycle_phase") or selected.get("phase"), 120),
        recent_outcomes=_outcomes(packet),
        next_intent=compact(packet.get("next_intent") or packet.get("recommended_action")),
        session_ref=session_ref,
    )
    fingerprint = digest_ref(material)
    return {
        **material,
        "turn_instance_id": turn_instance_id,
        "situation_fingerprint": fingerprint,
        "turn_recall_id": recall_id(fingerprint, turn_instance_id),
    }


def recall_id(fingerprint: str, turn_instance_id: str) -> str:
    return prefixed_id(
        "tr_", {"situation_fingerprint": fingerprint, "turn_instance_id": turn_instance_id}
    )


def query(situation: dict) -> str:
    """The one recall query (never stored; only its digest leaves): the situation's
    own words — Todo, action, target, phase, next intent, recent outcomes — without
    labels, so ranking sees only terms that describe the work."""
    todo = situation["selected_todo"]
    parts = [
        todo.get("title") or todo.get("todo_id") or "autonomous agent turn",
        todo.get("action_kind"),
        todo.get("target_key"),
        situation["phase"],
        situation["next_intent"],
        *(ref.replace(":", " ").replace("_", " ") for ref in situation["recent_outcomes"]),
    ]
    return " ".join(p for p in parts if p)[:500]


def query_evidence(situation: dict, text: str) -> dict:
    todo = situation["selected_todo"].get("todo_id") or "unselected"
    return {
        "query_digest": text_digest_ref(text),
        "query_summary": f"turn admission for {situation['goal_id']} {todo} "
        f"during {situation['phase'] or 'unknown'}"[:220],
        "exact_query_exposed": False,
    }
