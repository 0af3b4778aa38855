"""End to end: real committed settlements → dispatches → validated intents → executor decision.

Nothing here calls the periodic-report producer; it is reached only through the
settlement seam, the composition root and the dispatcher.
"""

from hooks import contracts, registry
from hooks.models import HookDispatch, HookIntent, IntentExecution
from tests.helpers import run_cli

SETTLE = ("turn", "settle", "--goal-id", "demo", "--agent-id", "author")


def _ok(*argv):
    result = run_cli(*argv)
    assert result.code == 0, result.stdout + result.stderr
    return result.json


def test_completion_and_replan_settlements_end_at_executor_decisions(db):
    _ok("goal", "register", "--goal-id", "demo", "--agent-id", "author", "--execute")
    _ok("todo", "add", "--goal-id", "demo", "--todo-id", "write-tests", "--title", "Write tests",
        "--segment-ref", "sprint-1", "--execute")  # fmt: skip
    _ok("todo", "add", "--goal-id", "demo", "--todo-id", "ship-docs", "--title", "Ship docs",
        "--segment-ref", "sprint-2", "--execute")  # fmt: skip

    preview = _ok(*SETTLE, "--todo-id", "write-tests", "--turn-instance-id", "turn-1",
                  "--event-kind", "todo_completed")  # fmt: skip
    assert preview["status"] == "preview"
    assert not HookDispatch.objects.exists()

    done = _ok(*SETTLE, "--todo-id", "write-tests", "--turn-instance-id", "turn-1",
               "--event-kind", "todo_completed", "--execute")  # fmt: skip
    replan = _ok(*SETTLE, "--todo-id", "ship-docs", "--turn-instance-id", "turn-2",
                 "--event-kind", "replan_recorded", "--execute")  # fmt: skip
    assert done["receipt"]["state"] == replan["receipt"]["state"] == "committed"
    assert done["receipt"]["receipt_id"] == preview["receipt"]["receipt_id"]

    dispatches = _ok("hooks", "dispatches")["dispatches"]
    assert {d["receipt_id"] for d in dispatches} == {
        done["receipt"]["receipt_id"],
        replan["receipt"]["receipt_id"],
    }
    assert {d["status"] for d in dispatches} == {"accepted"}
    for d in dispatches:
        assert d["dispatch_id"] == contracts.dispatch_id(
            receipt_id=d["receipt_id"],
            hook_id="periodic_report.runtime_trigger",
            registration_schema_version=contracts.REGISTRATION_SCHEMA,
            event_kind=d["event_kind"],
            registration_digest=d["registration_digest"],
        )

    pending = _ok("hooks", "intents", "--status", "pending")["intents"]
    assert len(pending) == 2
    hook = registry.installed().hooks[0]
    for packet in pending:
        stored = {k: v for k, v in packet.items() if k != "outbox"}
        revalidated = contracts.validate_intent(
            stored,
            where="intent",
            registration=hook.registration,
            dispatch_id=packet["source_dispatch_id"],
            intent_contracts=hook.intent_contracts,
        )
        assert revalidated == stored
    transitions = sorted(p["payload"]["transition"] for p in pending)
    assert transitions == ["replan_recorded", "segment_completed"]

    preview_run = _ok("hooks", "execute-intents", "--executor", "fake-scheduler")
    assert [d["action"] for d in preview_run["decisions"]] == ["would_execute"] * 2
    assert HookIntent.objects.filter(status="pending").count() == 2

    executed = _ok("hooks", "execute-intents", "--executor", "fake-scheduler", "--execute")
    assert [d["action"] for d in executed["decisions"]] == ["executed", "executed"]
    assert executed["network_calls"] == executed["sink_calls"] == 0
    by_intent = {d["intent_id"]: d["decision"] for d in executed["decisions"]}
    recorded = {e.intent.intent_id: e.decision for e in IntentExecution.objects.all()}
    assert recorded == by_intent
    assert sorted(d["decision"] for d in recorded.values()) == ["hold", "promote"]
    assert len(_ok("hooks", "intents", "--status", "executed")["intents"]) == 2

    # Replaying everything changes nothing.
    again = _ok(*SETTLE, "--todo-id", "write-tests", "--turn-instance-id", "turn-1",
                "--event-kind", "todo_completed", "--execute")  # fmt: skip
    assert again["status"] == "replayed"
    assert again["hook_phase"]["dispatches"] == done["hook_phase"]["dispatches"]
    assert _ok("hooks", "replay", "--execute")["count"] == 0
    assert (
        _ok("hooks", "execute-intents", "--executor", "fake-scheduler", "--execute")["decisions"]
        == []
    )
    assert HookIntent.objects.count() == 2
    assert IntentExecution.objects.count() == 2
