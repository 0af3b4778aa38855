"""Races (threads and real processes) and the SIGKILL crash-recovery path.

Run on SQLite (file database, IMMEDIATE transactions) and on PostgreSQL.
"""

import json
import signal
import subprocess
import sys
import threading

import pytest
from django.db import connection

from hooks import contracts, isolation, registry, services
from hooks.models import (
    DurableWritebackReceipt,
    HookDispatch,
    HookIntent,
    HookPhaseCheckpoint,
    QuotaSpend,
    Todo,
    TurnSettlement,
)
from loopx_site.core import services as core_services
from tests.helpers import ROOT, subprocess_env
from tests.hooks import providers
from tests.hooks.factories import settle


def _registration_digest(hook_id: str, env: dict) -> str:
    """The registration digest the subprocess computes for ``hook_id``."""
    bound = registry._build(tuple(env["LOOPX_POST_WRITEBACK_HOOKS"].split(",")))
    return next(h.registration_digest for h in bound.hooks if h.hook_id == hook_id)


pytestmark = pytest.mark.django_db(transaction=True)

PERIODIC = "hooks.capabilities.periodic_report.PeriodicReportRuntimeTrigger"
ECHO = "hooks.capabilities.synthetic.EchoSyntheticHook"
SETTLE_ARGS = [
    "turn", "settle", "--goal-id", "demo", "--agent-id", "author", "--todo-id", "t1",
    "--turn-instance-id", "turn-1", "--event-kind", "todo_completed", "--execute",
]  # fmt: skip


@pytest.fixture
def seeded():
    core_services.register_goal(goal_id="demo", agent_ids=["author"])
    services.add_todo(
        goal_id="demo", todo_id="t1", title="Private", segment_ref="seg-1", execute=True
    )


def race(n: int, fn):
    barrier = threading.Barrier(n)
    results: list = [None] * n

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=10)
            results[i] = fn()
        except Exception as exc:  # reported by the assertions below
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return results


def _one_of_each(hooks: int = 1, intents: int = 1):
    assert TurnSettlement.objects.count() == 1
    assert DurableWritebackReceipt.objects.count() == 1
    assert QuotaSpend.objects.count() == 1
    assert HookDispatch.objects.count() == hooks
    assert HookIntent.objects.count() == intents
    assert HookPhaseCheckpoint.objects.count() == 1
    todo = Todo.objects.get()
    assert (todo.state, todo.revision) == ("completed", 2)


@pytest.mark.parametrize("n", [2, 8])
def test_racing_duplicate_settles_in_threads_commit_once(seeded, install, n):
    install("Proposer", PERIODIC)
    results = race(n, lambda: settle())
    assert not [r for r in results if isinstance(r, Exception)], results
    statuses = sorted(r.status for r in results)
    assert statuses == ["committed"] + ["replayed"] * (n - 1)
    assert len({r.payload["receipt"]["receipt_id"] for r in results}) == 1
    _one_of_each(hooks=2, intents=2)
    final = settle().payload["hook_phase"]["dispatches"]
    for r in results:
        assert [d["dispatch_id"] for d in r.payload["hook_phase"]["dispatches"]] == [
            d["dispatch_id"] for d in final
        ]


def _bare_receipt(install, *names):
    install(*names)
    settle(profile=None)
    HookDispatch.objects.all().delete()
    HookPhaseCheckpoint.objects.all().delete()
    return DurableWritebackReceipt.objects.get().receipt_id


def _phase(receipt_id):
    receipt = DurableWritebackReceipt.objects.select_related(
        "settlement__goal", "settlement__agent", "settlement__todo"
    ).get(receipt_id=receipt_id)
    return services.run_hook_phase(receipt)


@pytest.mark.parametrize("n", [2, 8])
def test_racing_hook_dispatches_in_threads_record_one_row(seeded, install, settings, n):
    settings.LOOPX_HOOK_WORKERS = n + 2  # every racer gets a worker slot
    receipt_id = _bare_receipt(install, "BarrierProposer")
    providers.BarrierProposer.BARRIER = providers.barrier(n)
    isolation.reset()  # kept workers (LOOPX_HOOK_ISOLATION=worker) predate the barrier
    try:
        results = race(n, lambda: _phase(receipt_id))
    finally:
        providers.BarrierProposer.BARRIER = None
    assert [r.status for r in results] == ["dispatched"] * n
    outcomes = sorted(r.outcomes[0].outcome for r in results)
    assert outcomes == ["recorded"] + ["replayed"] * (n - 1)
    # counted on the parent side: a child killed at its timeout on a loaded machine still ran
    assert providers.INVOKED.ran["pi.barrier"] == n + 1  # n racers + the first settle
    _one_of_each(hooks=1, intents=1)


def test_racing_dispatches_with_different_results_conflict_and_keep_one(
    seeded, install, settings, caplog
):
    n = 4
    settings.LOOPX_HOOK_WORKERS = n + 2
    receipt_id = _bare_receipt(install, "BarrierFlaky")
    providers.BarrierProposer.BARRIER = providers.barrier(n)
    isolation.reset()  # kept workers (LOOPX_HOOK_ISOLATION=worker) predate the barrier
    caplog.set_level("INFO", logger="loopx.hooks")
    try:
        results = race(n, lambda: _phase(receipt_id))
    finally:
        providers.BarrierProposer.BARRIER = None
    # A racer whose child brought no result (it did not answer within its budget on a
    # loaded machine, or no worker was free) replays the kept one instead of conflicting.
    late = sum(
        r.getMessage().startswith(
            (
                "hook rho.barrier_flaky timed out",
                "hook rho.barrier_flaky not run",
                "hook rho.barrier_flaky failed",
            )
        )
        for r in caplog.records
    )
    outcomes = sorted(r.outcomes[0].outcome for r in results)
    assert outcomes == ["conflict"] * (n - 1 - late) + ["recorded"] + ["replayed"] * late
    assert late < n - 1, "every racer but one timed out: nothing raced"
    assert {r.outcomes[0].code for r in results if r.outcomes[0].outcome != "replayed"} == {
        None,
        "intent_conflict",
    }
    row = HookDispatch.objects.get()
    assert row.conflict_count == n - 1 - late
    assert row.conflict_code == "intent_conflict"
    assert HookIntent.objects.count() == 1


def _run(argv, **env):
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=subprocess_env(**env),
        cwd=ROOT,
        check=False,
    )


def _spawn(argv, **env):
    return subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=subprocess_env(**env),
        cwd=ROOT,
    )


@pytest.mark.slow
def test_racing_settle_processes_commit_once(seeded):
    procs = [_spawn(SETTLE_ARGS, LOOPX_POST_WRITEBACK_HOOKS=f"{PERIODIC},{ECHO}") for _ in range(4)]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, out + err
        outputs.append(json.loads(out))
    assert sorted(o["status"] for o in outputs) == ["committed", "replayed", "replayed", "replayed"]
    assert len({o["receipt"]["receipt_id"] for o in outputs}) == 1
    _one_of_each(hooks=2, intents=2)


@pytest.mark.slow
def test_sigkill_between_primary_commit_and_dispatch_then_replay_gives_identical_ids(seeded):
    hooks_env = {"LOOPX_POST_WRITEBACK_HOOKS": f"{PERIODIC},{ECHO}"}
    killed = _run(SETTLE_ARGS, LOOPX_HOOKS_FAULT="after_primary_commit:kill", **hooks_env)
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    assert killed.stdout == ""

    receipt = DurableWritebackReceipt.objects.get()
    assert receipt.state == "committed"
    assert QuotaSpend.objects.filter(receipt=receipt).count() == 1
    assert Todo.objects.get().state == "completed"
    assert not HookDispatch.objects.exists()
    assert not HookPhaseCheckpoint.objects.exists()

    expected = {
        hook: contracts.dispatch_id(
            receipt_id=receipt.receipt_id,
            hook_id=hook,
            registration_schema_version=contracts.REGISTRATION_SCHEMA,
            event_kind="todo_completed",
            registration_digest=_registration_digest(hook, hooks_env),
        )
        for hook in ("periodic_report.runtime_trigger", "synthetic.echo")
    }
    preview = json.loads(_run(["hooks", "replay"], **hooks_env).stdout)
    assert preview["receipts"][0]["reason"] == "missing_checkpoint"
    assert sorted(preview["receipts"][0]["planned_dispatch_ids"]) == sorted(expected.values())
    assert not HookDispatch.objects.exists()

    replayed = _run(["hooks", "replay", "--execute"], **hooks_env)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    (item,) = json.loads(replayed.stdout)["receipts"]
    assert {d["hook_id"]: d["dispatch_id"] for d in item["dispatches"]} == expected
    assert {d["status"] for d in item["dispatches"]} == {"accepted"}
    intent_ids = sorted(i for d in item["dispatches"] for i in d["intent_ids"])
    for row in HookIntent.objects.select_related("dispatch"):
        assert row.intent_id == contracts.intent_id(
            dispatch_id=row.dispatch.dispatch_id,
            intent_kind=row.intent_kind,
            policy_version=row.policy_version,
            payload=row.payload,
        )

    # Replaying again (another process), and settling again, adds nothing and changes nothing.
    again = json.loads(_run(["hooks", "replay", "--execute"], **hooks_env).stdout)
    assert again["count"] == 0
    settled = json.loads(_run(SETTLE_ARGS, **hooks_env).stdout)
    assert settled["status"] == "replayed"
    assert settled["hook_phase"]["dispatches"] == item["dispatches"]
    assert HookDispatch.objects.count() == 2
    assert sorted(HookIntent.objects.values_list("intent_id", flat=True)) == intent_ids

    # A second crash-recovery of the same receipt reproduces the very same identities.
    HookDispatch.objects.all().delete()
    HookPhaseCheckpoint.objects.all().delete()
    rerun = json.loads(_run(["hooks", "replay", "--execute"], **hooks_env).stdout)
    (item2,) = rerun["receipts"]
    assert sorted(i for d in item2["dispatches"] for i in d["intent_ids"]) == intent_ids
    assert {d["hook_id"]: d["dispatch_id"] for d in item2["dispatches"]} == expected


@pytest.mark.slow
def test_racing_replay_processes_record_each_dispatch_once(seeded):
    hooks_env = {"LOOPX_POST_WRITEBACK_HOOKS": f"{PERIODIC},{ECHO}"}
    killed = _run(SETTLE_ARGS, LOOPX_HOOKS_FAULT="after_primary_commit:kill", **hooks_env)
    assert killed.returncode == -signal.SIGKILL
    procs = [_spawn(["hooks", "replay", "--execute"], **hooks_env) for _ in range(4)]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, out + err
    _one_of_each(hooks=2, intents=2)


def test_next_settle_of_the_agent_recovers_a_crashed_hook_phase(seeded, install):
    install(PERIODIC)
    services.add_todo(
        goal_id="demo", todo_id="t2", title="Second", segment_ref="seg-2", execute=True
    )
    first = settle().payload
    HookDispatch.objects.all().delete()
    HookPhaseCheckpoint.objects.all().delete()
    second = settle(todo_id="t2", turn="turn-2", event_kind="replan_recorded").payload
    assert second["hook_phase"]["recovered_receipt_ids"] == [first["receipt"]["receipt_id"]]
    assert HookDispatch.objects.count() == 2
    assert HookPhaseCheckpoint.objects.count() == 2
