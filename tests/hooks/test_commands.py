import pytest

from hooks.models import HookDispatch, Todo, TurnSettlement
from tests.helpers import run_cli

SETTLE = [
    "turn", "settle", "--goal-id", "demo", "--agent-id", "author", "--todo-id", "t1",
    "--turn-instance-id", "turn-1", "--event-kind", "todo_completed",
]  # fmt: skip


def test_todo_add_and_list_json_and_text(goal):
    preview = run_cli("todo", "add", "--goal-id", "demo", "--todo-id", "t1", "--title", "Write",
                      "--segment-ref", "seg-1")  # fmt: skip
    assert (preview.json["status"], preview.json["execute"]) == ("preview", False)
    assert preview.json["todo"]["todo_id"] == "t1"
    assert run_cli("todo", "list", "--goal-id", "demo").json["todos"] == []
    added = run_cli("todo", "add", "--goal-id", "demo", "--todo-id", "t1", "--title", "Write",
                    "--segment-ref", "seg-1", "--execute")  # fmt: skip
    assert added.code == 0, added.stdout
    assert added.json["created"] is True
    assert added.json["todo"]["state"] == "open"
    again = run_cli("todo", "add", "--goal-id", "demo", "--todo-id", "t1", "--title", "Write",
                    "--segment-ref", "seg-1", "--execute")  # fmt: skip
    assert again.json["created"] is False
    assert again.json["status"] == "unchanged"
    listed = run_cli("todo", "list", "--goal-id", "demo")
    assert [t["todo_id"] for t in listed.json["todos"]] == ["t1"]
    text = run_cli("todo", "list", "--goal-id", "demo", "--format", "text")
    assert text.stdout.splitlines()[0].split()[:3] == ["TODO_ID", "STATE", "SEGMENT_REF"]
    assert "t1" in text.stdout


def test_turn_settle_previews_then_executes(todo):
    preview = run_cli(*SETTLE)
    assert preview.code == 0, preview.stdout
    assert preview.json["status"] == "preview"
    assert not TurnSettlement.objects.exists()
    done = run_cli(*SETTLE, "--execute")
    assert done.json["status"] == "committed"
    assert done.json["hook_phase"]["dispatches"][0]["hook_id"] == "periodic_report.runtime_trigger"
    text = run_cli(*SETTLE, "--execute", "--format", "text")
    assert "status: replayed" in text.stdout
    assert "periodic_report.runtime_trigger" in text.stdout


def test_hooks_listing_commands_filter_and_render_tables(todo, install):
    install("Proposer", "Raiser")
    run_cli(*SETTLE, "--execute")
    failed = run_cli("hooks", "dispatches", "--failure-code", "producer_failed")
    assert [d["hook_id"] for d in failed.json["dispatches"]] == ["delta.raiser"]
    ok = run_cli("hooks", "dispatches", "--status", "accepted", "--goal-id", "demo")
    assert [d["hook_id"] for d in ok.json["dispatches"]] == ["beta.proposer"]
    page = run_cli("hooks", "dispatches", "--limit", "1")
    assert len(page.json["dispatches"]) == 1
    rest = run_cli("hooks", "dispatches", "--after-cursor", str(page.json["next_cursor"]))
    assert len(rest.json["dispatches"]) == 1
    assert rest.json["dispatches"][0]["dispatch_id"] != page.json["dispatches"][0]["dispatch_id"]
    intents = run_cli("hooks", "intents", "--status", "pending")
    assert len(intents.json["intents"]) == 1
    table = run_cli("hooks", "dispatches", "--format", "text").stdout.splitlines()
    assert table[0].split()[:2] == ["DISPATCH_ID", "HOOK_ID"]
    assert len(table) == 3
    text = run_cli("hooks", "intents", "--format", "text").stdout
    assert "pending" in text


def test_hooks_replay_preview_and_execute(todo, install):
    install("Proposer")
    run_cli(*SETTLE, "--execute", "--profile", "default")
    HookDispatch.objects.all().delete()
    from hooks.models import HookPhaseCheckpoint

    HookPhaseCheckpoint.objects.all().delete()
    preview = run_cli("hooks", "replay")
    assert preview.json["count"] == 1
    assert preview.json["receipts"][0]["reason"] == "missing_checkpoint"
    assert len(preview.json["receipts"][0]["planned_dispatch_ids"]) == 1
    assert not HookDispatch.objects.exists()
    done = run_cli("hooks", "replay", "--execute")
    assert (
        done.json["receipts"][0]["dispatches"][0]["dispatch_id"]
        == (preview.json["receipts"][0]["planned_dispatch_ids"][0])
    )
    assert run_cli("hooks", "replay", "--format", "text").stdout.startswith("RECEIPT_ID")


def test_execute_intents_command_preview_and_text(todo):
    run_cli(*SETTLE, "--execute")
    preview = run_cli("hooks", "execute-intents", "--executor", "fake-scheduler")
    assert preview.json["decisions"][0]["action"] == "would_execute"
    text = run_cli("hooks", "execute-intents", "--executor", "fake-scheduler", "--execute",
                   "--format", "text")  # fmt: skip
    assert text.code == 0
    assert "executed" in text.stdout
    assert "promote" in text.stdout


@pytest.mark.parametrize(
    ("argv", "code", "field"),
    [
        (["todo", "add", "--goal-id", "demo", "--todo-id", "bad id", "--title", "x"],
         "invalid_argument", "todo_id"),
        (["todo", "add", "--goal-id", "demo", "--todo-id", "t9"], "invalid_argument", "title"),
        (["todo", "list", "--goal-id", "ghost"], "goal_not_registered", "goal_id"),
        (["todo", "list", "--goal-id", "demo", "--state", "gone"], "invalid_argument", "state"),
        ([*SETTLE[:-1], "todo_deleted"], "invalid_argument", "event_kind"),
        (["turn", "settle", "--goal-id", "demo"], "invalid_argument", None),
        ([*SETTLE[:7], "missing", *SETTLE[8:], "--execute"], "todo_not_found", "todo_id"),
        ([*SETTLE, "--profile", "fast"], "invalid_argument", "profile"),
        (["turn", "explode"], "invalid_argument", None),
        (["hooks", "dispatches", "--status", "weird"], "invalid_argument", "status"),
        (["hooks", "dispatches", "--limit", "0"], "invalid_argument", "limit"),
        (["hooks", "dispatches", "--limit", "x"], "invalid_argument", "limit"),
        (["hooks", "intents", "--status", "sent"], "invalid_argument", "status"),
        (["hooks", "replay", "--receipt-id", "dwr_missing"], "receipt_not_found", "receipt_id"),
        (["hooks", "replay", "--limit", "9999"], "invalid_argument", "limit"),
        (["hooks", "execute-intents", "--executor", "mailer"], "invalid_argument", "executor"),
        (["hooks", "execute-intents"], "invalid_argument", "executor"),
        (["hooks", "execute-intents", "--executor", "fake-scheduler", "--limit", "0"],
         "invalid_argument", "limit"),
    ],
)  # fmt: skip
def test_malformed_command_input_exits_2_with_a_structured_error(todo, argv, code, field):
    result = run_cli(*argv)
    assert result.code == 2, result.stdout
    envelope = result.json
    assert envelope["ok"] is False
    assert envelope["schema_version"] == "post_writeback_hook_error_v0"
    assert envelope["code"] == code
    if field is not None:
        assert envelope["field"] == field
    assert "Traceback" not in result.stdout + result.stderr
    assert Todo.objects.count() == 1


def test_error_in_text_format_is_one_line(todo):
    result = run_cli("todo", "list", "--goal-id", "ghost", "--format", "text")
    assert result.code == 2
    # a person reads the flag they typed (README: `--goal-id`), not the field name
    assert result.stdout.strip().startswith("error: goal_not_registered (--goal-id)")


def test_settle_conflict_exits_2_with_409_code(todo):
    run_cli(*SETTLE, "--execute")
    result = run_cli(*SETTLE[:-1], "replan_recorded", "--execute")
    assert result.code == 2
    assert result.json["code"] == "settlement_conflict"


def test_commands_have_help(db):
    for argv in (["todo", "--help"], ["turn", "settle", "--help"], ["hooks", "--help"]):
        result = run_cli(*argv)
        assert result.code == 0
        assert "usage" in result.stdout.lower()
