"""Fork-based children that run one callable on bytes and answer within a deadline.

Two ways to run ``work(payload, max_bytes) -> Answer`` away from the calling process:

* :func:`run_in_child` — a child is forked for this one call and ends after its answer.
* :func:`run_in_worker` — a kept child (a *worker*) per ``owner`` object answers one
  framed call after another over pipes, so a call costs no fork; a worker past its
  deadline, or that dies, is killed and the next call forks a fresh one. Kept workers are
  retired by :func:`reset` and whenever the environment changed since their fork (what
  they inherited would be stale), at most two idle per owner and sixteen in all.

Both fork from this process: ``work`` and ``owner`` are inherited, nothing is imported
again. A call's answer travels as one frame (tag, length, body): :class:`Answer` with
``data``, or a one-byte ``failure`` tag the caller defines (never text of the child's
own), or one of the engine's outcomes: :data:`TIMED_OUT` (the deadline passed first),
:data:`CRASHED` (the pipe closed before a whole frame), :data:`OVER_BUDGET` (a body
longer than ``max_bytes``; never read).

Killing: each child leads its own process group. Past the deadline the group gets
SIGTERM and the caller goes on; a reaper thread SIGKILLs the group after
:data:`KILL_GRACE_S` and reaps the child. A child keeps no descriptor of this process
but its own pipe ends: every inherited one is pointed at ``/dev/null`` first thing
(``dup2``, not ``close``: a number an inherited object still owns is never handed to
something new), its standard streams too, its signal handlers are the defaults, and then
the caller's ``prepare()`` runs (e.g. letting go of inherited database connections).

:class:`Slots` bounds how many calls a process runs at once (never queues or blocks).

Standard library only (see README.md).
"""

import atexit
import contextlib
import logging
import math
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

logger = logging.getLogger("loopx.workers")

#: Seconds between SIGTERM and SIGKILL for a child past its deadline.
KILL_GRACE_S = 0.1


@dataclass(frozen=True)
class Answer:
    """What a call produced: ``data``, a caller-defined one-byte ``failure`` tag, or (with
    neither) the engine's ``outcome``."""

    data: bytes | None = None
    failure: bytes | None = None
    outcome: str = "answered"


TIMED_OUT = Answer(outcome="timed_out")
CRASHED = Answer(outcome="crashed")
OVER_BUDGET = Answer(outcome="over_budget")

#: ``work(payload, max_bytes) -> Answer``, run in the child; it must not raise.
Work = Callable[[bytes, int], Answer]

_RESULT_TAG = b"R"
_OVER_BUDGET_TAG = b"B"
_LENGTH = 4  # bytes of the frame's body length, after the one tag byte


def _no_preparation() -> None:
    return None


# -- a bound on running calls ------------------------------------------------------------
class Slots:
    """A bounded count of running invocations for this process (never queues or blocks).

    ``try_acquire`` takes a slot when one is free; ``try_start`` runs ``fn`` on a new daemon
    thread holding a slot until ``fn`` returns — not until the caller stops waiting — so a
    timed-out thread's work still counts against the bound.
    """

    def __init__(self, size: int):
        self.size = size
        self._slots = threading.BoundedSemaphore(size)
        self._lock = threading.Lock()
        self._busy = 0

    @property
    def busy(self) -> int:
        return self._busy

    def try_acquire(self) -> bool:
        if not self._slots.acquire(blocking=False):
            return False
        with self._lock:
            self._busy += 1
        return True

    def release(self) -> None:
        with self._lock:
            self._busy -= 1
        self._slots.release()

    def try_start(self, fn, *, name: str) -> threading.Thread | None:
        if not self.try_acquire():
            return None

        def work() -> None:
            try:
                fn()
            finally:
                self.release()

        thread = threading.Thread(target=work, name=name, daemon=True)
        try:
            thread.start()
        except RuntimeError:  # the interpreter cannot start a thread: give the slot back
            self.release()
            return None
        return thread


_fork_lock = threading.Lock()


def run_in_child(
    work: Work,
    payload: bytes,
    *,
    timeout_s: float,
    max_bytes: int,
    prepare: Callable[[], None] = _no_preparation,
) -> Answer | None:
    """Fork a child for this one call and read its answer until the deadline; ``None``
    when no process could be forked (not run: the caller may retry later). The child is
    finished off the caller's path (:func:`finish_later`)."""
    pid, answer = _in_child(work, payload, timeout_s, max_bytes, prepare)
    if pid is not None:
        finish_later(pid)
    return answer


def _in_child(work, payload: bytes, timeout_s: float, max_bytes: int, prepare):
    """Fork, read the child's one framed message until the deadline; ``(pid, answer)``.
    A child that answered is exiting already, one past its deadline has been sent
    SIGTERM here."""
    deadline = time.monotonic() + timeout_s
    with _fork_lock:  # no other child inherits this pipe's write end
        read_end, write_end = os.pipe()
        try:
            pid = os.fork()
        except OSError:  # no process to be had (limits, memory): not run, retried later
            os.close(read_end)
            os.close(write_end)
            logger.warning("child not started: fork failed")
            return None, None
        if pid == 0:  # the child: never returns
            os.close(read_end)
            _child(work, payload, max_bytes, write_end, prepare)
        os.close(write_end)
    with contextlib.suppress(OSError):  # also done by the child; whichever runs first wins
        os.setpgid(pid, pid)
    try:
        answer = _read_frame(read_end, deadline, max_bytes)
    except BaseException:
        _signal(pid, signal.SIGKILL)
        raise
    finally:
        os.close(read_end)
    if answer is TIMED_OUT or answer is OVER_BUDGET:
        _signal(pid, signal.SIGTERM)
    return pid, answer


def _child(work, payload: bytes, max_bytes: int, write_end: int, prepare) -> None:
    """The forked child: run ``work``, write one framed message, ``os._exit``."""
    code = 1
    try:
        _enter_child(keep=(write_end,), prepare=prepare)
        _write_answer(write_end, work(payload, max_bytes), max_bytes)
        code = 0
    finally:
        os._exit(code)  # no atexit, no finalizers, no flush of the parent's buffers


def _enter_child(*, keep: tuple[int, ...], prepare) -> None:
    """A fresh child's set-up: no descriptor of the parent but ``keep`` (its pipe ends),
    ``/dev/null`` for its standard streams, its own process group (so the parent can kill
    all of it), default signal handling, then the caller's ``prepare()``."""
    null = os.open(os.devnull, os.O_RDWR)
    _let_go_inherited(null, keep)
    for fd in (0, 1, 2):  # open even where the parent had them closed
        if fd not in keep:  # (a parent without stdin may have handed out 0 for a pipe)
            os.dup2(null, fd)
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    with contextlib.suppress(ValueError, OSError):  # a server's wake-up pipe is not ours
        signal.set_wakeup_fd(-1)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGHUP):
        with contextlib.suppress(ValueError, OSError):
            signal.signal(sig, signal.SIG_DFL)  # the server's handlers are not ours
    sys.stdin = sys.stdout = sys.stderr = open(os.devnull, "r+")  # noqa: SIM115
    prepare()


def _let_go_inherited(null: int, keep: tuple[int, ...]) -> None:
    """Point every descriptor this child inherited at ``null`` — all but ``keep``, ``null``
    itself and the standard streams (``/dev/null`` too, see ``_enter_child``). See the
    module docstring; in a threaded server a kept copy of a client connection keeps it
    open after the server closes it: no FIN reaches the peer (a proxy in front then
    reuses a connection nobody reads)."""
    for fd in _open_descriptors():
        if fd <= 2 or fd == null or fd in keep:
            continue
        try:
            os.fstat(fd)  # open? (``dup2`` onto a free number would open it)
        except OSError:
            continue
        with contextlib.suppress(OSError):
            os.dup2(null, fd, inheritable=False)  # nothing the child's work runs gets it


def _open_descriptors() -> list[int]:
    """The descriptor numbers open in this process (``/proc/self/fd``, ``/dev/fd``), or
    every number below the descriptor limit where neither can be listed."""
    for folder in ("/proc/self/fd", "/dev/fd"):
        with contextlib.suppress(OSError, ValueError):
            return sorted(int(name) for name in os.listdir(folder))
    try:
        limit = os.sysconf("SC_OPEN_MAX")
    except (OSError, ValueError):
        limit = 1024
    return list(range(min(limit if limit > 0 else 1024, 65536)))


def _write_answer(fd: int, answer: Answer, max_bytes: int) -> None:
    if answer == OVER_BUDGET or (answer.data is not None and len(answer.data) > max_bytes):
        tag, body = _OVER_BUDGET_TAG, b""
    elif answer.data is not None:
        tag, body = _RESULT_TAG, answer.data
    elif answer.failure is not None and len(answer.failure) == 1:
        tag, body = answer.failure, b""
    else:  # no other outcome is the child's to send: the parent sees a crash
        return
    _write_all(fd, tag + len(body).to_bytes(_LENGTH, "big") + body)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


# -- worker: a kept child per owner, killed and replaced when it overruns -------------------
@dataclass(eq=False)
class _Worker:
    pid: int
    request: int  # parent → worker: one framed invocation at a time
    answer: int  # worker → parent: one framed answer per invocation
    key: tuple
    owner: object  # the object it was forked for (kept alive: its id stays unique)


_REQUEST_HEADER = 4 + 4  # max_bytes, input length
_idle: list[_Worker] = []
_live: dict[int, _Worker] = {}  # every worker of this process, idle or busy, by pid
_workers_lock = threading.Lock()
_generation = 0


def _worker_key() -> tuple:
    """A kept worker is used only while nothing it inherited has changed: no
    :func:`reset` since its fork and the same environment."""
    return (_generation, hash(frozenset(os.environ.items())))


def reset() -> None:
    """Retire every idle worker (new ones are forked on demand): whatever they inherited
    is stale (a caller's configuration changed)."""
    global _generation
    with _workers_lock:
        _generation += 1
        retired, _idle[:] = list(_idle), []
    for worker in retired:
        _retire(worker)


def _retire(worker: _Worker, sig: int | None = None) -> None:
    with _workers_lock:
        _live.pop(worker.pid, None)
    if sig is not None:
        _signal(worker.pid, sig)
    for fd in (worker.request, worker.answer):  # EOF on its request pipe: it exits
        with contextlib.suppress(OSError):
            os.close(fd)
    finish_later(worker.pid)


def idle_workers() -> int:
    """How many kept workers wait for a call in this process."""
    with _workers_lock:
        return len(_idle)


def _forget_inherited_workers() -> None:
    """In any child forked from this process: the parent's workers are not ours."""
    global _workers_lock
    _workers_lock = threading.Lock()
    for worker in _live.values():
        for fd in (worker.request, worker.answer):
            with contextlib.suppress(OSError):
                os.close(fd)
    _live.clear()
    _idle.clear()


os.register_at_fork(after_in_child=_forget_inherited_workers)


def _take_worker(owner, work, prepare) -> _Worker | None:
    key = _worker_key()
    stale: list[_Worker] = []
    found = None
    with _workers_lock:
        for worker in list(_idle):
            if worker.key != key:
                _idle.remove(worker)
                stale.append(worker)
            elif found is None and worker.owner is owner:
                _idle.remove(worker)
                found = worker
    for worker in stale:
        _retire(worker)
    return found or _spawn_worker(owner, work, key, prepare)


def _spawn_worker(owner, work, key: tuple, prepare) -> _Worker | None:
    with _fork_lock:
        request_r, request_w = os.pipe()
        answer_r, answer_w = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            for fd in (request_r, request_w, answer_r, answer_w):
                os.close(fd)
            logger.warning("worker not started: fork failed")
            return None
        if pid == 0:  # the worker: never returns
            os.close(request_w)
            os.close(answer_r)
            _worker_main(work, request_r, answer_w, prepare)
        os.close(request_r)
        os.close(answer_w)
        worker = _Worker(pid, request_w, answer_r, key, owner)
        with _workers_lock:
            _live[pid] = worker
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)
    return worker


def _worker_main(work, request: int, answer: int, prepare) -> None:
    """The kept worker: answer one framed invocation after another until its request
    pipe closes (the parent retired it, or is gone)."""
    code = 1
    try:
        _enter_child(keep=(request, answer), prepare=prepare)
        while True:
            header = _read_exact(request, _REQUEST_HEADER)
            if header is None:
                break
            max_bytes = int.from_bytes(header[:4], "big")
            data = _read_exact(request, int.from_bytes(header[4:], "big"))
            if data is None:
                break
            _write_answer(answer, work(data, max_bytes), max_bytes)
        code = 0
    finally:
        os._exit(code)


def _read_exact(fd: int, n: int) -> bytes | None:
    chunks, size = [], 0
    while size < n:
        chunk = os.read(fd, n - size)
        if not chunk:
            return None
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


_MAX_IDLE_PER_PROVIDER = 2
_MAX_IDLE = 16  # in all: the oldest idle worker goes first (e.g. a rebuilt registry's)


def run_in_worker(
    owner: object,
    work: Work,
    payload: bytes,
    *,
    timeout_s: float,
    max_bytes: int,
    prepare: Callable[[], None] = _no_preparation,
) -> Answer | None:
    """Run ``work`` in a kept worker of ``owner`` (forked with this ``work`` when none is
    idle) and read its answer until the deadline; ``None`` when no process could be
    forked. A worker that overran, died or went over budget is retired (SIGTERM, then
    SIGKILL after the grace); one that answered waits for the next call."""
    deadline = time.monotonic() + timeout_s
    header = max_bytes.to_bytes(4, "big") + len(payload).to_bytes(4, "big")
    for _ in range(2):  # a kept worker found dead before it got the call: one fresh retry
        worker = _take_worker(owner, work, prepare)
        if worker is None:
            return None
        try:
            _write_all(worker.request, header + payload)
        except OSError:
            _retire(worker, signal.SIGKILL)
            continue
        break
    else:
        return CRASHED
    try:
        answer = _read_frame(worker.answer, deadline, max_bytes)
    except BaseException:
        _retire(worker, signal.SIGKILL)
        raise
    if answer is TIMED_OUT or answer is OVER_BUDGET or answer is CRASHED:
        _retire(worker, signal.SIGTERM)  # SIGKILL after the grace, then reaped
        return answer
    _keep(worker)
    return answer


def _keep(worker: _Worker) -> None:
    """Back to the idle list while it is current and the bounds allow, else retired."""
    evicted = None
    with _workers_lock:
        same = sum(1 for w in _idle if w.owner is worker.owner)
        keep = worker.key == _worker_key() and same < _MAX_IDLE_PER_PROVIDER
        if keep:
            _idle.append(worker)
            if len(_idle) > _MAX_IDLE:
                evicted = _idle.pop(0)
    if not keep:
        _retire(worker)
    if evicted is not None:
        _retire(evicted)


def _read_frame(fd: int, deadline: float, max_bytes: int) -> Answer:
    """The child's answer: one frame ``tag, length, body``. ``TIMED_OUT`` when the deadline
    passes first, ``CRASHED`` when the pipe closes before a whole frame (the child died or
    cut it), ``OVER_BUDGET`` for a body longer than the byte budget (not read)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    buffer = bytearray()
    need = 1 + _LENGTH
    while len(buffer) < need:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return TIMED_OUT
        if not poller.poll(math.ceil(remaining * 1000)):
            continue
        chunk = os.read(fd, max(need - len(buffer), 65536))
        if not chunk:
            return CRASHED
        buffer += chunk
        if need == 1 + _LENGTH and len(buffer) >= need:
            length = int.from_bytes(buffer[1:need], "big")
            if length > max_bytes:
                return OVER_BUDGET
            need += length
    tag, body = bytes(buffer[:1]), bytes(buffer[1 + _LENGTH : need])
    if tag == _RESULT_TAG:
        return Answer(data=body)
    if body or len(buffer) > need:
        return CRASHED
    if tag == _OVER_BUDGET_TAG:
        return OVER_BUDGET
    return Answer(failure=tag)


# -- finishing a child -----------------------------------------------------------------------
def finish_later(pid: int) -> None:
    """Finish the child off the caller's path: the settlement does not wait for it.

    A (non-daemon) thread waits up to :data:`KILL_GRACE_S` for the child to exit, SIGKILLs
    its group (the child if it is still there, and anything it started) and reaps it;
    interpreter exit waits for that thread, so no child outlives a short-lived process."""
    try:
        threading.Thread(target=_finish, args=(pid,), name=f"loopx-worker-reap:{pid}").start()
    except RuntimeError:  # no thread to be had: finish here
        _finish(pid)


def _finish(pid: int) -> None:
    _wait_exit(pid, KILL_GRACE_S)
    _signal(pid, signal.SIGKILL)  # a stubborn child, and whatever it left in its group
    with contextlib.suppress(ChildProcessError):  # the host reaps children itself
        os.waitpid(pid, 0)


def _wait_exit(pid: int, timeout: float) -> bool:
    """Wait (without reaping) until the child exits; ``False`` after ``timeout`` seconds.

    Sleeps on a pidfd where the kernel has them (one wake-up), else polls ``waitid``."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    if pidfd is not None:
        try:
            poller = select.poll()
            poller.register(pidfd, select.POLLIN)
            return bool(poller.poll(math.ceil(timeout * 1000)))
        finally:
            os.close(pidfd)
    deadline = time.monotonic() + timeout
    pause = 0.0005
    while True:
        try:
            info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # already reaped elsewhere (SIGCHLD ignored)
            return True
        if info is not None or time.monotonic() >= deadline:
            return info is not None
        time.sleep(pause)
        pause = min(pause * 2, 0.01)


def _signal(pid: int, sig: int) -> None:
    """Signal the child's process group (its id is the child's pid, see ``setpgid``);
    the child alone if the group does not exist."""
    try:
        os.killpg(pid, sig)
        return
    except ProcessLookupError:
        pass
    except PermissionError:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def _shutdown() -> None:
    """At interpreter exit: end every idle worker here (no thread can start any more)."""
    with _workers_lock:
        idle, _idle[:] = list(_idle), []
    for worker in idle:
        for fd in (worker.request, worker.answer):
            with contextlib.suppress(OSError):
                os.close(fd)
        _finish(worker.pid)


atexit.register(_shutdown)
