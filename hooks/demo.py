"""Demo data of the hooks app: two Todos of Goal ``demo``, one committed
``todo_completed`` and one ``replan_recorded`` settlement, their dispatches and intents,
and one intent decided by the ``fake-scheduler`` executor (the other stays pending so the
admin's admit/reject actions have something to act on).

Create-only (``loopx_site.core.demo_kit``): a Todo or a settlement that exists is kept —
never settled, executed or decided again — so an operator's admit/reject stays."""

from hooks import selectors, services
from hooks.models import DurableWritebackReceipt, Todo, TurnSettlement
from loopx_site.core.demo_kit import Ledger

TODOS = [
    ("demo-write-tests", "Write the settlement tests", "demo-segment-1"),
    ("demo-ship-docs", "Ship the API docs", "demo-segment-2"),
]
TURNS = [
    ("demo-write-tests", "demo-turn-1", "todo_completed"),
    ("demo-ship-docs", "demo-turn-2", "replan_recorded"),
]


def _settlement(turn_instance_id: str):
    return TurnSettlement.objects.filter(
        agent__goal__goal_id="demo", agent__agent_id="author", turn_instance_id=turn_instance_id
    )


def load(*, log) -> dict:
    ledger = Ledger()
    for todo_id, title, segment in TODOS:
        ledger.ensure(
            f"todo demo/{todo_id}",
            exists=Todo.objects.filter(goal__goal_id="demo", todo_id=todo_id).exists,
            create=lambda todo_id=todo_id, title=title, segment=segment: services.add_todo(
                goal_id="demo", todo_id=todo_id, title=title, segment_ref=segment, execute=True
            ),
        )
    for todo_id, turn, event_kind in TURNS:
        settled = ledger.ensure(
            f"settlement demo/author/{turn}",
            exists=_settlement(turn).exists,
            create=lambda todo_id=todo_id, turn=turn, event_kind=event_kind: services.settle(
                goal_id="demo",
                agent_id="author",
                todo_id=todo_id,
                turn_instance_id=turn,
                event_kind=event_kind,
                execute=True,
            ),
        )
        if settled is not None and event_kind == "todo_completed":
            # the first settlement's intents are decided once, when it is created
            intents = [
                i for d in settled.payload["hook_phase"]["dispatches"] for i in d["intent_ids"]
            ]
            if intents:
                services.execute_intents(
                    executor="fake-scheduler", execute=True, intent_ids=intents
                )
    receipts = [
        DurableWritebackReceipt.objects.filter(settlement__in=_settlement(turn))
        .order_by("created_at", "pk")
        .first()
        for _, turn, _ in TURNS
    ]
    dispatches = [d for r in receipts if r is not None for d in selectors.dispatch_payloads(r)]
    log(f"settled 2 Turns of Goal demo ({ledger.summary()}); {len(dispatches)} hook dispatch(es)")
    return ledger.document(
        todos=[todo_id for todo_id, _, _ in TODOS],
        receipts=[r.receipt_id for r in receipts if r is not None],
        dispatches=[d["dispatch_id"] for d in dispatches],
        intents=[i for d in dispatches for i in d["intent_ids"]],
    )
