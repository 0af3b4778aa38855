from hooks import demo
from hooks.models import (
    DurableWritebackReceipt,
    HookDispatch,
    HookIntent,
    IntentExecution,
    Todo,
    TurnSettlement,
)
from loopx_site.core import demo as core_demo
from tests.helpers import run_cli


def _counts():
    return [
        m.objects.count()
        for m in (Todo, TurnSettlement, DurableWritebackReceipt, HookDispatch, HookIntent,
                  IntentExecution)
    ]  # fmt: skip


def test_demo_shows_todo_settlement_dispatch_and_intents_and_is_idempotent(db):
    logs = []
    core_demo.load(log=logs.append)
    first = demo.load(log=logs.append)
    counts = _counts()
    assert counts == [2, 2, 2, 2, 2, 1]
    assert set(HookIntent.objects.values_list("status", flat=True)) == {"executed", "pending"}
    again = demo.load(log=logs.append)
    assert {**first, "status": "kept", "objects": again["objects"]} == again
    assert set(again["objects"].values()) == {"kept"}
    assert _counts() == counts
    assert "0 created, 5 kept" in logs[-1]  # the validator, 2 Todos, 2 settlements


def test_loopx_demo_command_loads_the_hooks_demo(db):
    result = run_cli("loopx_demo")
    assert result.code == 0, result.stdout
    assert len(result.json["loaded"]["hooks"]["intents"]) == 2
