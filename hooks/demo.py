"""Demo data of the hooks app (idempotent): two Todos of Goal ``demo``, one committed
``todo_completed`` and one ``replan_recorded`` settlement, their dispatches and intents,
and one intent decided by the ``fake-scheduler`` executor (the other stays pending so the
admin's admit/reject actions have something to act on)."""

from hooks import services


def load(*, log) -> dict:
    services.add_todo(
        goal_id="demo",
        todo_id="demo-write-tests",
        title="Write the settlement tests",
        segment_ref="demo-segment-1",
        execute=True,
    )
    services.add_todo(
        goal_id="demo",
        todo_id="demo-ship-docs",
        title="Ship the API docs",
        segment_ref="demo-segment-2",
        execute=True,
    )
    done = services.settle(
        goal_id="demo",
        agent_id="author",
        todo_id="demo-write-tests",
        turn_instance_id="demo-turn-1",
        event_kind="todo_completed",
        execute=True,
    )
    replan = services.settle(
        goal_id="demo",
        agent_id="author",
        todo_id="demo-ship-docs",
        turn_instance_id="demo-turn-2",
        event_kind="replan_recorded",
        execute=True,
    )
    first = [i for d in done.payload["hook_phase"]["dispatches"] for i in d["intent_ids"]]
    if first:
        services.execute_intents(executor="fake-scheduler", execute=True, intent_ids=first)
    dispatches = (
        done.payload["hook_phase"]["dispatches"] + replan.payload["hook_phase"]["dispatches"]
    )
    log(
        f"settled 2 Turns of Goal demo ({done.status}, {replan.status}); "
        f"{len(dispatches)} hook dispatch(es)"
    )
    return {
        "todos": ["demo-write-tests", "demo-ship-docs"],
        "receipts": [r.payload["receipt"]["receipt_id"] for r in (done, replan)],
        "dispatches": [d["dispatch_id"] for d in dispatches],
        "intents": [i for d in dispatches for i in d["intent_ids"]],
    }
