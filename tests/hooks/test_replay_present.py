"""Hook replay keeps the original identities and reports the present: the intents'
outbox state now (executed, rejected since), and it never writes a second projection."""

from hooks.models import (
    DurableWritebackReceipt,
    HookDispatch,
    HookIntent,
    HookPhaseCheckpoint,
    IntentExecution,
    QuotaSpend,
)
from tests.hooks.factories import TodoFactory, rendered_execution, rendered_replay, settle


def _rows():
    return tuple(
        model.objects.count()
        for model in (
            DurableWritebackReceipt,
            QuotaSpend,
            HookDispatch,
            HookIntent,
            HookPhaseCheckpoint,
            IntentExecution,
        )
    )


def test_hook_replay_reports_intents_executed_since_and_writes_no_second_projection(agent):
    TodoFactory(goal=agent.goal, todo_id="t1", segment_ref="seg-1")
    first = settle().payload
    receipt_id = first["receipt"]["receipt_id"]
    dispatch_ids = [d["dispatch_id"] for d in first["hook_phase"]["dispatches"]]
    intent_ids = [i for d in first["hook_phase"]["dispatches"] for i in d["intent_ids"]]
    assert intent_ids, "the default periodic-report hook proposes an intent"
    before = rendered_replay(receipt_id=receipt_id, execute=True)["receipts"][0]
    assert {s["status"] for s in before["intent_states"]} == {"pending"}
    rendered_execution(executor="fake-scheduler", execute=True)
    rows = _rows()

    replay = rendered_replay(receipt_id=receipt_id, execute=True)["receipts"][0]
    preview = rendered_replay(receipt_id=receipt_id)["receipts"][0]
    again = settle().payload

    assert [d["dispatch_id"] for d in replay["dispatches"]] == dispatch_ids
    assert [s["intent_id"] for s in replay["intent_states"]] == intent_ids
    assert {s["status"] for s in replay["intent_states"]} == {"executed"}
    assert preview["intent_states"] == replay["intent_states"]
    assert {o["outcome"] for o in replay["outcomes"]} == {"replayed"}
    assert again["status"] == "replayed"
    assert again["receipt"]["receipt_id"] == receipt_id
    assert [d["dispatch_id"] for d in again["hook_phase"]["dispatches"]] == dispatch_ids
    assert _rows() == rows, "a replay writes no second projection"
