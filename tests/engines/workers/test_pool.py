"""The worker engine on its own: plain callables, no app, no database. Every wait is on
a pipe or a process end, bounded generously; nothing races a wall clock except the
deliberately hung child, which must be answered ``TIMED_OUT`` at its deadline."""

import os
import signal
import threading
import time

import pytest

from loopx_site.engines import workers
from loopx_site.engines.workers import pool

pytestmark = pytest.mark.slow  # forks real processes


@pytest.fixture(autouse=True)
def _no_kept_workers():
    workers.reset()
    yield
    workers.reset()


def echo(payload: bytes, max_bytes: int) -> workers.Answer:
    return workers.Answer(data=payload.upper())


def pid_of_child(payload: bytes, max_bytes: int) -> workers.Answer:
    return workers.Answer(data=str(os.getpid()).encode())


def refuse(payload: bytes, max_bytes: int) -> workers.Answer:
    return workers.Answer(failure=b"X")


def hang(payload: bytes, max_bytes: int) -> workers.Answer:
    threading.Event().wait()
    raise AssertionError("unreachable")


def die(payload: bytes, max_bytes: int) -> workers.Answer:
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable")


def _gone(pid: int, timeout: float = 60.0) -> bool:
    """The child has exited and been reaped (by the engine's reaper thread)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return True
        if done:
            return True
        time.sleep(0.01)
    return False


@pytest.mark.parametrize("how", ["child", "worker"])
def test_a_child_answers_with_its_result_bytes(how):
    owner = object()
    if how == "child":
        answer = workers.run_in_child(echo, b"abc", timeout_s=60, max_bytes=16)
    else:
        answer = workers.run_in_worker(owner, echo, b"abc", timeout_s=60, max_bytes=16)
    assert answer == workers.Answer(data=b"ABC")


def test_a_failure_tag_travels_and_nothing_else_does():
    assert workers.run_in_child(refuse, b"", timeout_s=60, max_bytes=16) == workers.Answer(
        failure=b"X"
    )


def test_a_result_over_the_byte_budget_is_over_budget_and_never_read():
    answer = workers.run_in_child(echo, b"x" * 17, timeout_s=60, max_bytes=16)
    assert answer is workers.OVER_BUDGET


def test_a_child_that_dies_before_answering_is_crashed():
    assert workers.run_in_child(die, b"", timeout_s=60, max_bytes=16) is workers.CRASHED


def test_a_hung_child_is_timed_out_then_killed_and_reaped():
    owner = object()
    answer = workers.run_in_worker(owner, hang, b"", timeout_s=0.2, max_bytes=16)
    assert answer is workers.TIMED_OUT
    assert workers.idle_workers() == 0  # the overrunning worker is not kept
    with pool._workers_lock:
        pids = list(pool._live)
    assert all(_gone(pid) for pid in pids)


def test_a_kept_worker_answers_again_without_a_fork_until_reset():
    owner = object()
    first = workers.run_in_worker(owner, pid_of_child, b"", timeout_s=60, max_bytes=16)
    again = workers.run_in_worker(owner, pid_of_child, b"", timeout_s=60, max_bytes=16)
    assert first.data == again.data != str(os.getpid()).encode()
    assert workers.idle_workers() == 1
    workers.reset()
    assert workers.idle_workers() == 0
    assert _gone(int(first.data))
    fresh = workers.run_in_worker(owner, pid_of_child, b"", timeout_s=60, max_bytes=16)
    assert fresh.data != first.data


def test_each_owner_has_its_own_workers():
    one, two = object(), object()
    a = workers.run_in_worker(one, pid_of_child, b"", timeout_s=60, max_bytes=16)
    b = workers.run_in_worker(two, pid_of_child, b"", timeout_s=60, max_bytes=16)
    assert a.data != b.data
    assert workers.idle_workers() == 2


def test_a_child_keeps_no_inherited_descriptor_but_its_pipe_ends(tmp_path):
    held = os.open(tmp_path / "held", os.O_CREAT | os.O_RDWR)  # open in the parent

    def where(payload: bytes, max_bytes: int) -> workers.Answer:
        return workers.Answer(data=os.readlink(f"/proc/self/fd/{held}").encode())

    try:
        answer = workers.run_in_child(where, b"", timeout_s=60, max_bytes=4096)
    finally:
        os.close(held)
    assert answer.data == os.devnull.encode()


def test_prepare_runs_in_the_child_before_the_work():
    def prepare() -> None:
        os.environ["WORKERS_PREPARED"] = "yes"

    def read(payload: bytes, max_bytes: int) -> workers.Answer:
        return workers.Answer(data=os.environ.get("WORKERS_PREPARED", "no").encode())

    answer = workers.run_in_child(read, b"", timeout_s=60, max_bytes=16, prepare=prepare)
    assert answer.data == b"yes"
    assert "WORKERS_PREPARED" not in os.environ


def test_slots_bound_running_calls_and_never_block():
    slots = workers.Slots(1)
    release = threading.Event()
    thread = slots.try_start(release.wait, name="held")
    assert thread is not None
    assert slots.busy == 1
    assert slots.try_acquire() is False
    assert slots.try_start(lambda: None, name="refused") is None
    release.set()
    thread.join(60)
    assert slots.busy == 0
    assert slots.try_acquire() is True
    slots.release()
