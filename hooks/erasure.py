"""The hooks' part of a Goal erasure (``loopx_site.core.erasure``): dispatch results,
intent payloads and execution decisions, settlement receipts' event facts and (for the
whole Goal) Todo titles are replaced by digests; ids, states and digests stay so replays
and the outbox still recognise what ran."""

from typing import Any

from hooks.models import DurableWritebackReceipt, HookDispatch, HookIntent, IntentExecution, Todo
from loopx_site.core.canonical import digest_ref


def _scope(model, goal, agent):
    rows = model.objects.filter(goal=goal)
    return rows if agent is None else rows.filter(agent=agent)


def _replace(rows, field: str, value) -> int:
    count = 0
    for row in rows:
        setattr(row, field, value(getattr(row, field)))
        row.save(update_fields=[field])
        count += 1
    return count


def _digest(value: Any) -> dict[str, Any]:
    return {"erased": True, "digest": digest_ref(value)}


def erase(*, goal, agent=None) -> dict[str, Any]:
    """Erase the Goal's (or the Agent's) hook payloads and owner prose."""
    dispatches = _scope(HookDispatch, goal, agent).select_for_update()
    intents = _scope(HookIntent, goal, agent)
    receipts = DurableWritebackReceipt.objects.filter(settlement__goal=goal)
    if agent is not None:
        receipts = receipts.filter(settlement__agent=agent)
    removed = {
        "hooks.HookDispatch": _replace(dispatches.exclude(result=None), "result", lambda _: None),
        "hooks.HookIntent": _replace(intents, "payload", _digest),
        "hooks.IntentExecution": _replace(
            IntentExecution.objects.filter(intent__in=intents).exclude(decision=None),
            "decision",
            lambda _: None,
        ),
        "hooks.DurableWritebackReceipt": _replace(receipts, "event_facts", _digest),
    }
    if agent is None:
        removed["hooks.Todo"] = _replace(
            Todo.objects.filter(goal=goal), "title", lambda t: digest_ref(t)
        )
    return {"removed": removed}
