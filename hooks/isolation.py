"""Where a hook provider runs: a child process killed at its timeout, or a thread.

``settings.LOOPX_HOOK_ISOLATION``:

* ``worker`` (default) — each hook's invocations run in a kept child forked from this
  process for that provider (``os.fork``: the installed provider object is inherited,
  nothing is re-imported, no database is needed — the child detaches the inherited
  connections and never uses them). Parent and worker exchange one framed invocation and
  one framed answer at a time over pipes, so a call costs no fork. A worker past the
  hook's ``timeout_ms``, or that dies, is killed (below) and a fresh one is forked for the
  next call; kept workers are retired on any settings change or a changed environment
  (their inherited state would be stale), at most two idle per provider.
* ``process`` — a child is forked for every invocation and ends after its one answer:
  nothing a provider does survives an invocation. Costs one fork per call, which grows
  with this process's memory (``bench/hooks_isolation_bench.py``).
* ``thread`` — the provider runs on a daemon thread of this process. A hung provider
  cannot be stopped: it keeps its slot until it returns, so a few hung calls make later
  hooks fail with ``dispatch_budget_exhausted``. Kept for hosts without ``fork`` and as
  the baseline of the benchmark.

Killing (``worker`` and ``process``): each child leads its own process group. When the
timeout passes first, the group gets SIGTERM and the settlement goes on; a reaper thread
SIGKILLs the group after :data:`KILL_GRACE_S` and reaps the child. A hung provider
therefore holds nothing past its timeout — no thread, no slot, no grandchild — and every
other hook keeps its own budget. A child that dies without a whole answer is
``producer_failed`` (``provider_crashed``). A child's stdin, stdout and stderr are
``/dev/null``: nothing a provider prints reaches the CLI's output or a log.

A child keeps no descriptor of this process but its own pipe ends
(:func:`_let_go_inherited`): ``fork`` copies every descriptor open at that instant — in a
threaded server the listening socket, the keep-alive connections other threads are
serving, the database and Redis sockets, the server's wake-up pipes. A kept worker holding
a copy of a client connection keeps that connection open after the server closes it: no
FIN is sent, the proxy in front (HAProxy) believes its idle connection is alive, reuses it
and the next request waits on a socket nobody reads. So, first thing in the child, every
inherited descriptor is pointed at ``/dev/null`` (``dup2``, not ``close``: a number an
inherited object still owns is never handed to something new). A provider opens what it
needs (a database connection, a file) inside ``produce``.

All models share :func:`produce` (call the provider, encode its result, apply the byte
budget) and one per-process bound on running invocations, :class:`WorkerPool`
(``settings.LOOPX_HOOK_WORKERS``); a slot is held while an invocation runs (until its
answer, or its signal at the timeout). :func:`run` returns ``None`` when no slot is free;
the dispatcher records that as ``dispatch_budget_exhausted``.
"""

import atexit
import contextlib
import json
import logging
import math
import os
import select
import signal
import sys
import threading
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.signals import setting_changed

from hooks import errors as codes
from loopx_site.core.canonical import canonical_bytes

logger = logging.getLogger("loopx.hooks")

DEFAULT_WORKERS = 4
#: Seconds between SIGTERM and SIGKILL for a child past its timeout.
KILL_GRACE_S = 0.1


@dataclass(frozen=True)
class Produced:
    """What one invocation produced: canonical result bytes, or a failure code."""

    data: bytes | None = None
    code: str | None = None
    reason: str = ""


RAISED = Produced(code=codes.PRODUCER_FAILED, reason="provider_raised")
CRASHED = Produced(code=codes.PRODUCER_FAILED, reason="provider_crashed")
NOT_JSON = Produced(code=codes.RESULT_CONTRACT_REJECTED, reason="result:not_json")
OVER_BUDGET = Produced(code=codes.RESULT_CONTRACT_REJECTED, reason="result:byte_budget")
TIMED_OUT = Produced(code=codes.PRODUCER_TIMED_OUT, reason="timeout_ms_exceeded")

# The child reports a failure by one of these tags (never by text of its own), so nothing
# a provider raises can travel to a receipt.
_RESULT_TAG = b"R"
_FAILURE_TAGS = {b"F": RAISED, b"J": NOT_JSON, b"B": OVER_BUDGET}


def mode() -> str:
    return getattr(settings, "LOOPX_HOOK_ISOLATION", "worker")


def produce(provider, input_bytes: bytes, max_bytes: int) -> Produced:
    """Call the provider on a fresh copy of its input; never raises."""
    try:
        produced = provider.produce(json.loads(input_bytes))
    except BaseException:  # isolate everything a provider does; keep nothing of it
        return RAISED
    try:
        data = canonical_bytes(produced)
    except (TypeError, ValueError, RecursionError):
        return NOT_JSON
    if len(data) > max_bytes:
        return OVER_BUDGET
    return Produced(data=data)


# -- the per-process bound -------------------------------------------------------------------
class WorkerPool:
    """A bounded count of running invocations for this process (never queues or blocks).

    ``try_acquire`` takes a slot when one is free; ``try_start`` runs ``fn`` on a new daemon
    thread holding a slot until ``fn`` returns — not until the caller stops waiting — so a
    timed-out thread provider still counts against the bound.
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


_pools: dict[int, WorkerPool] = {}
_pools_lock = threading.Lock()


def worker_pool() -> WorkerPool:
    """This process's pool for the configured size (one pool per distinct size)."""
    size = max(1, int(getattr(settings, "LOOPX_HOOK_WORKERS", DEFAULT_WORKERS)))
    with _pools_lock:
        pool = _pools.get(size)
        if pool is None:
            pool = _pools[size] = WorkerPool(size)
        return pool


# -- running one invocation ----------------------------------------------------------------
def run(
    provider, input_bytes: bytes, *, hook_id: str, timeout_s: float, max_bytes: int
) -> Produced | None:
    """Run one invocation under the configured isolation; ``None`` when no slot is free."""
    chosen = mode()
    if chosen == "thread":
        return _in_thread(provider, input_bytes, hook_id, timeout_s, max_bytes)
    pool = worker_pool()
    if not pool.try_acquire():
        return None
    try:
        if chosen == "worker":
            return _in_worker(provider, input_bytes, timeout_s, max_bytes)
        pid, produced = _in_child(provider, input_bytes, timeout_s, max_bytes)
    finally:
        pool.release()
    if pid is not None:
        _finish_later(pid)
    return produced


def _in_thread(provider, input_bytes, hook_id, timeout_s, max_bytes) -> Produced | None:
    box: list[Produced] = []
    worker = worker_pool().try_start(
        lambda: box.append(produce(provider, input_bytes, max_bytes)),
        name=f"loopx-hook:{hook_id}",
    )
    if worker is None:
        return None
    worker.join(timeout_s)
    if worker.is_alive():
        return TIMED_OUT
    return box[0]


_fork_lock = threading.Lock()


def _in_child(provider, input_bytes: bytes, timeout_s: float, max_bytes: int):
    """Fork, read the child's one framed message until the deadline; ``(pid, produced)``.

    The caller finishes the child (:func:`_finish_later`): a child that answered is
    exiting already, one past its deadline has been sent SIGTERM here."""
    deadline = time.monotonic() + timeout_s
    with _fork_lock:  # no other child inherits this pipe's write end
        read_end, write_end = os.pipe()
        try:
            pid = os.fork()
        except OSError:  # no process to be had (limits, memory): not run, retried later
            os.close(read_end)
            os.close(write_end)
            logger.warning("hook child not started: fork failed")
            return None, None
        if pid == 0:  # the child: never returns
            os.close(read_end)
            _child(provider, input_bytes, max_bytes, write_end)
        os.close(write_end)
    with contextlib.suppress(OSError):  # also done by the child; whichever runs first wins
        os.setpgid(pid, pid)
    try:
        produced = _read_frame(read_end, deadline, max_bytes)
    except BaseException:
        _signal(pid, signal.SIGKILL)
        raise
    finally:
        os.close(read_end)
    if produced is TIMED_OUT or produced is OVER_BUDGET:
        _signal(pid, signal.SIGTERM)
    return pid, produced


def _child(provider, input_bytes: bytes, max_bytes: int, write_end: int) -> None:
    """The forked child: run the provider, write one framed message, ``os._exit``."""
    code = 1
    try:
        _enter_child(keep=(write_end,))
        _write_answer(write_end, produce(provider, input_bytes, max_bytes))
        code = 0
    finally:
        os._exit(code)  # no atexit, no finalizers, no flush of the parent's buffers


def _enter_child(*, keep: tuple[int, ...]) -> None:
    """A fresh child's set-up: no descriptor of the parent but ``keep`` (its pipe ends),
    ``/dev/null`` for its standard streams, its own process group (so the parent can kill
    all of it), default signal handling, no database."""
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
    _detach_database()


def _let_go_inherited(null: int, keep: tuple[int, ...]) -> None:
    """Point every descriptor this child inherited at ``null`` — all but ``keep``, ``null``
    itself and the standard streams (``/dev/null`` too, see ``_enter_child``). See the
    module docstring: a kept copy of a socket the parent closes keeps the connection
    open."""
    for fd in _open_descriptors():
        if fd <= 2 or fd == null or fd in keep:
            continue
        try:
            os.fstat(fd)  # open? (``dup2`` onto a free number would open it)
        except OSError:
            continue
        with contextlib.suppress(OSError):
            os.dup2(null, fd, inheritable=False)  # nothing a provider runs gets it


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


def _write_answer(fd: int, produced: Produced) -> None:
    if produced.data is not None:
        tag, body = _RESULT_TAG, produced.data
    else:
        tag, body = next(t for t, p in _FAILURE_TAGS.items() if p == produced), b""
    _write_all(fd, tag + len(body).to_bytes(_LENGTH, "big") + body)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


# -- worker: a kept child per provider, killed and replaced when it overruns ---------------
@dataclass(eq=False)
class _Worker:
    pid: int
    request: int  # parent → worker: one framed invocation at a time
    answer: int  # worker → parent: one framed answer per invocation
    key: tuple
    provider: object  # the object it was forked with (kept alive: its id stays unique)


_REQUEST_HEADER = 4 + 4  # max_bytes, input length
_idle: list[_Worker] = []
_live: dict[int, _Worker] = {}  # every worker of this process, idle or busy, by pid
_workers_lock = threading.Lock()
_generation = 0


def _worker_key() -> tuple:
    """A kept worker is used only while nothing it inherited has changed: no settings
    change (``reset``) and the same environment."""
    return (_generation, hash(frozenset(os.environ.items())))


def reset() -> None:
    """Retire every idle worker (new ones are forked on demand). Called on every settings
    change (``setting_changed``) and by tests."""
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
    _finish_later(worker.pid)


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


def _take_worker(provider) -> _Worker | None:
    key = _worker_key()
    stale: list[_Worker] = []
    found = None
    with _workers_lock:
        for worker in list(_idle):
            if worker.key != key:
                _idle.remove(worker)
                stale.append(worker)
            elif found is None and worker.provider is provider:
                _idle.remove(worker)
                found = worker
    for worker in stale:
        _retire(worker)
    return found or _spawn_worker(provider, key)


def _spawn_worker(provider, key: tuple) -> _Worker | None:
    with _fork_lock:
        request_r, request_w = os.pipe()
        answer_r, answer_w = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            for fd in (request_r, request_w, answer_r, answer_w):
                os.close(fd)
            logger.warning("hook worker not started: fork failed")
            return None
        if pid == 0:  # the worker: never returns
            os.close(request_w)
            os.close(answer_r)
            _worker_main(provider, request_r, answer_w)
        os.close(request_r)
        os.close(answer_w)
        worker = _Worker(pid, request_w, answer_r, key, provider)
        with _workers_lock:
            _live[pid] = worker
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)
    return worker


def _worker_main(provider, request: int, answer: int) -> None:
    """The kept worker: answer one framed invocation after another until its request
    pipe closes (the parent retired it, or is gone)."""
    code = 1
    try:
        _enter_child(keep=(request, answer))
        while True:
            header = _read_exact(request, _REQUEST_HEADER)
            if header is None:
                break
            max_bytes = int.from_bytes(header[:4], "big")
            data = _read_exact(request, int.from_bytes(header[4:], "big"))
            if data is None:
                break
            _write_answer(answer, produce(provider, data, max_bytes))
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


def _in_worker(provider, input_bytes: bytes, timeout_s: float, max_bytes: int):
    deadline = time.monotonic() + timeout_s
    header = max_bytes.to_bytes(4, "big") + len(input_bytes).to_bytes(4, "big")
    for _ in range(2):  # a kept worker found dead before it got the call: one fresh retry
        worker = _take_worker(provider)
        if worker is None:
            return None
        try:
            _write_all(worker.request, header + input_bytes)
        except OSError:
            _retire(worker, signal.SIGKILL)
            continue
        break
    else:
        return CRASHED
    try:
        produced = _read_frame(worker.answer, deadline, max_bytes)
    except BaseException:
        _retire(worker, signal.SIGKILL)
        raise
    if produced is TIMED_OUT or produced is OVER_BUDGET or produced is CRASHED:
        _retire(worker, signal.SIGTERM)  # SIGKILL after the grace, then reaped
        return produced
    _keep(worker)
    return produced


def _keep(worker: _Worker) -> None:
    """Back to the idle list while it is current and the bounds allow, else retired."""
    evicted = None
    with _workers_lock:
        same = sum(1 for w in _idle if w.provider is worker.provider)
        keep = worker.key == _worker_key() and same < _MAX_IDLE_PER_PROVIDER
        if keep:
            _idle.append(worker)
            if len(_idle) > _MAX_IDLE:
                evicted = _idle.pop(0)
    if not keep:
        _retire(worker)
    if evicted is not None:
        _retire(evicted)


_kept: list = []


def _detach_database() -> None:
    """Forget the inherited database connections without closing them.

    A connection's socket is shared with the parent; using or closing it here would
    corrupt or end the parent's session. The objects are kept referenced (and the child
    leaves by ``os._exit``), so nothing is ever sent on them; a provider that queries
    anyway gets a connection of its own."""
    from django.db import connections

    for connection in connections.all(initialized_only=True):
        if connection.connection is not None:
            _kept.append(connection.connection)
            connection.connection = None


_LENGTH = 4  # bytes of the frame's body length, after the one tag byte


def _read_frame(fd: int, deadline: float, max_bytes: int) -> Produced:
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
        return Produced(data=body)
    if body or len(buffer) > need:
        return CRASHED
    return _FAILURE_TAGS.get(tag, CRASHED)


# -- finishing a child -----------------------------------------------------------------------
def _finish_later(pid: int) -> None:
    """Finish the child off the caller's path: the settlement does not wait for it.

    A (non-daemon) thread waits up to :data:`KILL_GRACE_S` for the child to exit, SIGKILLs
    its group (the child if it is still there, and anything it started) and reaps it;
    interpreter exit waits for that thread, so no child outlives a CLI run."""
    try:
        threading.Thread(target=_finish, args=(pid,), name=f"loopx-hook-reap:{pid}").start()
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


def _on_setting_changed(**kwargs) -> None:
    reset()


def _shutdown() -> None:
    """At interpreter exit: end every idle worker here (no thread can start any more)."""
    with _workers_lock:
        idle, _idle[:] = list(_idle), []
    for worker in idle:
        for fd in (worker.request, worker.answer):
            with contextlib.suppress(OSError):
                os.close(fd)
        _finish(worker.pid)


setting_changed.connect(_on_setting_changed, dispatch_uid="loopx-hook-workers")
atexit.register(_shutdown)
