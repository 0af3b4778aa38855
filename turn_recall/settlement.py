"""Settle a Turn with its Reward Memory reflection: the ONE composition both adapters
(``manage.py turn settle`` and ``POST /api/v1/turns/settle/``) call.

Validate, then commit:

1. every part of the request is checked before anything is written — the settlement's
   identities and event (``hooks``), and the reflection (``reward_memory.
   prepare_reflection``: shape, Agent, configured surface); a bad part raises a
   structured error and writes nothing (no Todo change, no receipt, no candidate);
2. the primary writeback (``hooks.services.settle``: one transaction, then the hook phase);
3. the reflection: stored ``awaiting_evidence_validation``; the settled Todo's declared
   completion validator runs on the server (``hooks.services.validators``) and its outcome
   becomes the server-built ``reward_memory_reflection_validation_v0``; only a passing one
   finalises (``reward_memory.settle_reflection``).

Who may settle is decided here for every adapter (``caller``, from the one resolver;
``None`` is the operator's shell): the caller must reach the Goal and Agent, and a
reflection — which ingests into the Agent's own, possibly private, memory — needs an
operator or the Agent's own token.

A validation document supplied by the caller is never read: the result says
``caller_validation_ignored: true``. Without a declared validator nothing runs and the
candidate stays ``awaiting_evidence_validation`` with zero provider calls.

The hooks service returns the rows it settled; this composition is their edge: it renders
them (``hooks.documents.settle_result``) as soon as the settlement returns, then adds the
reflection's outcome beside them.
"""

from dataclasses import dataclass
from typing import Any

from hooks import documents as hooks_documents
from hooks import selectors as hooks_selectors
from hooks import services as hooks_services
from hooks.errors import AREA as HOOKS_AREA
from loopx_site.core import access
from reward_memory import services as reward_memory
from reward_memory.documents import reflection as reflection_documents


@dataclass(frozen=True)
class SettledTurn:
    """A settled Turn as its adapters answer it: the settlement's status and its
    rendered ``loopx_turn_settlement_v0`` (with the reflection's outcome beside it)."""

    status: str  # preview | committed | replayed
    payload: dict


def settle_turn(
    *,
    reflection: Any = None,
    caller_validation_supplied: bool = False,
    caller: access.Caller | None = None,
    **settlement: Any,
) -> SettledTurn:
    """See the module docstring. ``settlement`` are ``hooks.services.settle``'s own
    arguments (``goal_id``, ``agent_id``, ``todo_id``, ``turn_instance_id``,
    ``event_kind``, ``execute``, ``profile``). Returns the rendered settlement, with
    ``reward_memory_reflection`` beside it when a reflection was given."""
    goal_id, agent_id = settlement["goal_id"], settlement["agent_id"]
    if caller is not None:
        _require_access(caller, goal_id, agent_id, reflection=reflection is not None)
    turn_instance_id = settlement["turn_instance_id"]
    execute = bool(settlement.get("execute", False))
    prepared = None
    if reflection is not None:  # checked completely before the primary transaction
        prepared = reward_memory.prepare_reflection(
            goal_id=goal_id,
            agent_id=agent_id,
            turn_instance_id=turn_instance_id,
            reflection=reflection,
        )
    result = hooks_services.settle(**settlement)
    payload = hooks_documents.settle_result(result)
    if caller_validation_supplied:
        payload["caller_validation_ignored"] = True
    if prepared is None:
        return SettledTurn(result.status, payload)
    runs: list[dict] = []

    def validate() -> dict | None:
        row = hooks_selectors.find_settlement(
            agent=prepared.agent, turn_instance_id=turn_instance_id
        )
        receipt = hooks_selectors.receipt_for(row)
        run = hooks_services.run_for_settlement(
            settlement=row, receipt=receipt, reflection=prepared.validator_view()
        ).public()
        runs.append(run)
        return reward_memory.validation_from_run(prepared, run)

    outcome = reward_memory.settle_reflection(
        prepared=prepared,
        settled=execute and result.status in ("committed", "replayed"),
        execute=execute,
        validate=validate,
        caller_validation_ignored=caller_validation_supplied,
    )
    document = reflection_documents.outcome(outcome)
    if runs:
        document["validator_run"] = runs[0]
    payload["reward_memory_reflection"] = document
    return SettledTurn(result.status, payload)


def _require_access(caller: access.Caller, goal_id, agent_id, *, reflection: bool) -> None:
    """The caller reaches the Goal and Agent; a reflection ingests into the Agent's own
    (possibly private) memory, so it needs an operator or the Agent's own token."""
    caller.require(goal_id, agent_id, area=HOOKS_AREA)
    if reflection:
        acting = caller.acting_for(goal_id, agent_id, area=HOOKS_AREA)
        acting.require_own_agent(
            "A settle reflection", field="reward_memory_reflection", area=HOOKS_AREA
        )
