"""Issue 25: every hook invocation runs in a child process killed at its timeout, so a
hung hook holds nothing past its timeout and every other hook keeps its own budget
(RFC section 10, validation-matrix row 8). Real forks, real signals; leaked children are
looked for in ``/proc``.

Written to hold on a busy machine: a hook meant to hang keeps its short timeout, so its
child may be killed before it ever ran; what these tests count is what this process did
(``providers.INVOKED``), and every wait is for an event (a child gone, a slot free) with a
bound (:data:`PATIENCE_S`) that only ends a broken run."""

import os
import signal
import time
from pathlib import Path

import pytest

from hooks import isolation
from hooks.models import DurableWritebackReceipt, HookDispatch, HookIntent, QuotaSpend
from tests.hooks import providers
from tests.hooks.factories import TodoFactory, settle

#: How long a wait for an event may take before the test is failed: far beyond what the
#: event needs on a loaded machine (a reaper's 0.1 s grace and a waitpid); it is reached
#: only when the event never comes.
PATIENCE_S = 60.0


def _wait_for(condition, timeout: float = PATIENCE_S) -> bool:
    """Poll ``condition`` until it holds (``True``) or ``timeout`` passes (``False``)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


def _children() -> set[int]:
    """Pids whose parent is this process (zombies included: an unreaped child leaks)."""
    me, found = os.getpid(), set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path("/proc", entry, "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == me:
            found.add(int(entry))
    return found


def _running(pid: int) -> bool:
    try:
        stat = Path("/proc", str(pid), "stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 :].split()[0] not in ("Z", "X")


def _codes(payload) -> dict:
    return {d["hook_id"]: d["failure_code"] for d in payload["hook_phase"]["dispatches"]}


@pytest.fixture(params=["process", "worker"])
def mode(request, settings):
    """Both isolations that can kill: a child per invocation, and kept workers."""
    settings.LOOPX_HOOK_ISOLATION = request.param
    return request.param


@pytest.fixture
def before():
    """The children this process already had (none are expected to be added)."""
    return _children()


def _no_children_left(before) -> bool:
    """Children are finished off the settlement's path: wait until every one this test
    started is killed and reaped, and its invocation slot is free again."""
    isolation.reset()  # kept workers (mode "worker") end too
    return _wait_for(lambda: _children() <= before and isolation.worker_pool().busy == 0)


@pytest.mark.slow
def test_one_always_hanging_hook_over_100_settles_starves_no_other_hook(
    agent, install, mode, settings, before
):
    settings.LOOPX_HOOK_WORKERS = 4  # the pool the hung threads used to exhaust
    install("Hanger", "Proposer", "Inert")
    n = 100
    for i in range(n):
        TodoFactory(goal=agent.goal, todo_id=f"t{i}", segment_ref=f"seg-{i}")
    for i in range(n):
        payload = settle(f"t{i}", f"turn-{i}").payload
        assert payload["status"] == "committed"
        assert _codes(payload) == {
            "alpha.inert": None,
            "beta.proposer": None,
            "omicron.hang": "producer_timed_out",
        }, i
    rows = HookDispatch.objects.all()
    assert rows.filter(hook_id="omicron.hang", failure_code="producer_timed_out").count() == n
    assert rows.filter(hook_id__in=["alpha.inert", "beta.proposer"], failure_code=None).count() == (
        2 * n
    )
    assert not rows.filter(failure_code="dispatch_budget_exhausted").exists()
    assert HookIntent.objects.count() == n  # one per settle, from beta.proposer
    assert QuotaSpend.objects.count() == n
    assert providers.CALLS["alpha.inert"] == providers.CALLS["beta.proposer"] == n
    assert providers.INVOKED.ran["omicron.hang"] == n
    assert _no_children_left(before)  # every child killed and reaped


def test_a_provider_ignoring_sigterm_is_killed_with_sigkill(todo, install, mode, before):
    install("StubbornHanger", "Proposer")
    payload = settle().payload
    assert _codes(payload) == {"beta.proposer": None, "omicron.stubborn": "producer_timed_out"}
    row = HookDispatch.objects.get(hook_id="omicron.stubborn")
    assert (row.failure_reason, row.attempts) == ("timeout_ms_exceeded", 1)
    assert _no_children_left(before)


def test_what_a_hung_provider_started_is_killed_with_it(todo, install, mode, before):
    install("ForkingHanger")
    for i in range(5):  # until a child got the CPU to fork before its timeout
        TodoFactory(goal=todo.goal, todo_id=f"f{i}", segment_ref=f"seg-f{i}")
        payload = settle(f"f{i}", f"turn-f{i}").payload
        assert _codes(payload) == {"omicron.forking": "producer_timed_out"}
        if list(providers.ForkingHanger.GRANDCHILDREN):
            break
    (grandchild, *_) = providers.ForkingHanger.GRANDCHILDREN
    assert grandchild["pid"] != os.getpid()
    assert _wait_for(lambda: not _running(grandchild["pid"]))
    assert _no_children_left(before)


def test_a_child_ending_without_a_result_is_a_producer_failure(todo, install, mode, before):
    install("HardExit", "Proposer")
    payload = settle().payload
    assert _codes(payload) == {"beta.proposer": None, "sigma.hard_exit": "producer_failed"}
    row = HookDispatch.objects.get(hook_id="sigma.hard_exit")
    assert row.failure_reason == "provider_crashed"
    assert not HookIntent.objects.filter(dispatch=row).exists()
    assert DurableWritebackReceipt.objects.get().state == "committed"
    assert _no_children_left(before)


def test_nothing_a_provider_prints_reaches_this_process_output(todo, install, mode, capfd):
    install("Printer")
    payload = settle().payload
    assert _codes(payload) == {"tau.printer": None}
    assert providers.CALLS["tau.printer"] == 1
    out, err = capfd.readouterr()
    assert "id_rsa" not in out + err
    assert "hunter2" not in out + err


class DatabaseToucher(providers.Base):
    """Queries through Django's connection from inside its child."""

    registration = providers.registration("upsilon.db")
    intent_contracts = providers.note_contract("upsilon")

    def make(self, hook_input):
        try:
            DurableWritebackReceipt.objects.count()
        finally:
            from django.db import connection

            connection.close()
        return super().make(hook_input)


def test_a_provider_using_the_database_cannot_disturb_the_parents_connection(todo, install, mode):
    install(f"{__name__}.DatabaseToucher", "Proposer")
    first = settle("t1", "turn-1").payload
    assert _codes(first)["beta.proposer"] is None
    assert providers.CALLS["upsilon.db"] == 1
    # the parent's own connection (and its open test transaction) is untouched
    TodoFactory(goal=todo.goal, todo_id="t2", segment_ref="seg-2")
    second = settle("t2", "turn-2").payload
    assert second["status"] == "committed"
    assert DurableWritebackReceipt.objects.count() == 2
    assert HookIntent.objects.count() == 2


def test_thread_isolation_runs_providers_in_this_process(todo, install, settings):
    settings.LOOPX_HOOK_ISOLATION = "thread"
    install("Sleeper", "Proposer", "Raiser")
    payload = settle().payload
    assert _codes(payload) == {
        "beta.proposer": None,
        "delta.raiser": "producer_failed",
        "epsilon.sleeper": "producer_timed_out",
    }
    assert providers.INVOKED.ran["epsilon.sleeper"] == 1
    assert isolation.worker_pool().busy == 1  # the sleeping thread still holds its slot
    providers.RELEASE.set()
    assert _wait_for(lambda: isolation.worker_pool().busy == 0)


class PidRecorder(providers.Proposer):
    """Records the pid of the process it ran in."""

    registration = providers.registration("phi.pid")
    intent_contracts = providers.note_contract("phi")
    PIDS = providers.Records("pids.jsonl")

    def make(self, hook_input):
        PidRecorder.PIDS.append({"pid": os.getpid()})
        return super().make(hook_input)


def test_a_kept_worker_serves_its_hook_until_a_setting_changes(agent, install, settings, before):
    settings.LOOPX_HOOK_ISOLATION = "worker"
    install(f"{__name__}.PidRecorder", "Sleeper")
    for i in range(4):
        TodoFactory(goal=agent.goal, todo_id=f"t{i}", segment_ref=f"seg-{i}")
    for i in range(3):
        codes = _codes(settle(f"t{i}", f"turn-{i}").payload)
        assert codes == {"phi.pid": None, "epsilon.sleeper": "producer_timed_out"}
    pids = [r["pid"] for r in PidRecorder.PIDS]
    assert len(set(pids)) == 1  # one worker, no fork per invocation
    assert pids[0] != os.getpid()
    settings.LOOPX_HOOK_WORKERS = 3  # any settings change retires the kept workers
    assert _codes(settle("t3", "turn-3").payload)["phi.pid"] is None
    last = list(PidRecorder.PIDS)[-1]["pid"]
    assert last not in pids
    assert providers.INVOKED.spawned["epsilon.sleeper"] == 4  # the hung worker, replaced each time
    assert _no_children_left(before)


def test_a_kept_worker_killed_while_idle_is_replaced_before_the_next_call(
    agent, install, settings, before
):
    settings.LOOPX_HOOK_ISOLATION = "worker"
    install(f"{__name__}.PidRecorder")
    for i in range(2):
        TodoFactory(goal=agent.goal, todo_id=f"t{i}", segment_ref=f"seg-{i}")
    assert _codes(settle("t0", "turn-0").payload) == {"phi.pid": None}
    (first,) = [r["pid"] for r in PidRecorder.PIDS]
    os.kill(first, signal.SIGKILL)
    assert _wait_for(lambda: not _running(first))
    assert _codes(settle("t1", "turn-1").payload) == {"phi.pid": None}  # not provider_crashed
    second = list(PidRecorder.PIDS)[-1]["pid"]
    assert second != first
    assert providers.CALLS["phi.pid"] == 2
    assert _no_children_left(before)
