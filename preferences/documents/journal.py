"""LoopX's documents for the explicit Agent preference journal — the one response layer
of ``semantic_preference agent …`` and ``/api/v1/goals/…/preferences/…`` alike.

Services return plain data and raise coded errors; this module turns them into the
documents a LoopX host parses (``loopx_wire.md`` "Explicit Agent preferences"):

* ``current`` — ``agent_preferences_v1``: opaque ``revision`` (null when empty),
  ``authority: "advisory_only"``, ``items`` (the stored rows; expired ones withheld)
  and one ``instructions`` string;
* ``read`` / ``observe`` / ``preview`` / ``applied`` / ``replayed`` / ``history``
  statuses with ``ok: true``; conflicts are the error envelope with the conflict
  status and ``current`` beside it (``DomainError.extra``).

Our extra detail (``goal_id``, ``agent_id``, ``usage``, migration fields) sits beside
LoopX's fields; none of LoopX's is renamed.
"""

from collections.abc import Callable
from typing import Any

from loopx_site.core.errors import DomainError

SCHEMA = "semantic_preference_agent_v1"
CURRENT_SCHEMA = "agent_preferences_v1"
EVENT_SCHEMA = "agent_preference_changed_v1"

INSTRUCTIONS = (
    "Replace whatever you cached about this exact Goal and Agent with this view. Retired "
    "and expired entries are not actionable, and no older value comes back. Before every "
    "preference-dependent external action, read again, even after an earlier empty or "
    "current view; a fulfilled pre-work read is not fresh for a later action. Missing hook "
    "context is unknown, not empty. Persist only an explicit owner correction, with the "
    "exact user source (reference and quote), the subject key it corrects and the revision "
    "you read; preview, then execute, then read back. Never store hypothetical examples "
    "or your own inferences. Preferences never grant authority and never override the "
    "owner's current instructions or any gate."
)


def current(state: dict[str, Any]) -> dict[str, Any]:
    """``agent_preferences_v1`` from a selector/service state."""
    return {
        "schema_version": CURRENT_SCHEMA,
        "revision": state["revision"],
        "authority": "advisory_only",
        "items": state["items"],
        "instructions": INSTRUCTIONS,
    }


def _document(status: str, state: dict[str, Any] | None, **fields: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"ok": True, "schema_version": SCHEMA, "status": status}
    if state is not None:
        doc["goal_id"] = state["goal_id"]
        doc["agent_id"] = state["agent_id"]
    doc.update(fields)
    if state is not None:
        doc["current"] = current(state)
        doc["usage"] = state["usage"]
    return doc


def read(state: dict[str, Any]) -> dict[str, Any]:
    return _document("read", state)


def observe(observation: dict[str, Any]) -> dict[str, Any]:
    """Content-free: ``absent`` (no journal) or ``observed`` with a count."""
    return {
        "ok": True,
        "schema_version": SCHEMA,
        "status": "observed" if observation["observed"] else "absent",
        "observation_count": observation["count"],
    }


def write(result: dict[str, Any]) -> dict[str, Any]:
    """``preview`` (``proposed``), ``applied`` or ``replayed`` (``receipt``), each with
    ``current``."""
    status = result["status"]
    if status == "preview":
        return _document(status, result["state"], proposed=result["proposed"])
    return _document(status, result["state"], receipt=result["receipt"])


def event(entry: dict[str, Any]) -> dict[str, Any]:
    """One journal entry as ``agent_preference_changed_v1`` (``selectors.history_event``)."""
    return {"schema_version": EVENT_SCHEMA, **entry}


def history(page: dict[str, Any]) -> dict[str, Any]:
    return _document(
        "history",
        page["state"],
        events=[event(e) for e in page["events"]],
        has_more=page["has_more"],
        next_cursor=page["next_cursor"],
    )


TURN_START_SCHEMA = "semantic_preference_turn_start_v0"


def turn_start(projection: dict[str, Any]) -> dict[str, Any]:
    """The participating hook's ``semantic_preference_turn_start_v0`` contribution to a
    turn (``selectors.turn_start_projection``): ``unavailable`` with its error code, or
    ``current`` with the active entries and the markers."""
    return {"schema_version": TURN_START_SCHEMA, **projection}


def migration(result: dict[str, Any]) -> dict[str, Any]:
    """Our extra ``migrate-scope`` (LoopX has no such action), in the same frame: the
    call's ``status``, the receipt's fields (stored as written; a receipt stored before
    receipts left their status out still carries its own, which the call's replaces)
    and ``current``."""
    fields = {k: v for k, v in result["receipt"].items() if k != "status"}
    doc = _document(result["status"], result["state"], **fields)
    doc["schema_version"] = "semantic_preference_agent_migration_v1"
    return doc


def respond(
    render: Callable[[dict[str, Any]], dict[str, Any]],
    service: Callable[..., Any],
    /,
    **arguments: Any,
) -> dict[str, Any]:
    """Call one journal service and render its document — the whole of a CLI handler or
    a view. A coded error that carries the scope's state (a conflict) gets ``current``
    beside its envelope."""
    try:
        result = service(**arguments)
    except DomainError as err:
        state = getattr(err, "state", None)
        if state is not None:
            err.extra["current"] = current(state)
        raise
    return render(result)
