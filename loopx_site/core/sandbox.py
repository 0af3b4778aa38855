"""The bounded subprocess sandbox shared by every operator-installed extension (semantic
preference providers, Todo completion validators).

One request on stdin, one response on stdout:

* the program runs directly (never a shell) in a new session, so it leads its own process
  group; on timeout, on an oversized response and after it exits, the whole group is
  killed (``os.killpg`` with SIGKILL) — children it spawned do not outlive it;
* a wall-clock deadline covers start, stdin, stdout and exit;
* stdout is read incrementally and capped: one byte past the cap kills the group;
* stderr goes to ``/dev/null`` — it is never read, logged or copied;
* the environment is minimal: ``PATH`` and ``LANG`` plus only what the caller passes
  explicitly (the built-in provider's database settings and verified scope), never the
  parent's secrets;
* the program runs in a fresh scratch directory (removed afterwards), inherits no file
  descriptor besides its three pipes, and gets CPU-time, address-space, process-count
  and file-size limits (``resource.setrlimit`` in the child before ``exec``);
* before the first spawn this process marks itself non-dumpable
  (``prctl(PR_SET_DUMPABLE, 0)``), so a same-user child cannot read
  ``/proc/<parent>/environ`` or attach to it; the child sets ``no_new_privs`` and, under
  a root server (which an operator must not run), drops the capabilities that bypass
  that mark.

* under a root server the child runs as an unprivileged user of its own
  (``LOOPX_SANDBOX_USER``, default ``nobody``; no supplementary groups), so it cannot read
  what only the server may (``.local/secret_key`` and the SQLite database are created
  mode 0600); the built-in provider, which is the server's own code and reads its
  database, runs as the server (``as_server=True``);
* the whole run is reaped: this process makes itself a child subreaper
  (``prctl(PR_SET_CHILD_SUBREAPER)``), so a grandchild that double-forks and leaves the
  session is re-parented here instead of to init; after the group kill every such orphan
  of this run (its environment carries the run's token; under a root server, any orphan
  running as the sandbox user) is killed and reaped, until none is left.

Every failure is reduced to one of the pinned failure kinds; no exception text, exit
status or output of the provider leaves this module except the accepted stdout bytes.
"""

import contextlib
import ctypes
import ctypes.util
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass

try:
    import resource
except ImportError:  # pragma: no cover - not POSIX
    resource = None

MAX_STDOUT_BYTES = 256_000
_CHUNK = 65_536

EXECUTION_FAILED = "execution_failed"
TIMED_OUT = "timed_out"
NONZERO_EXIT = "nonzero_exit"
RESPONSE_TOO_LARGE = "response_too_large"


#: Child limits. CPU seconds are a backstop above the wall-clock timeout; the address
#: space fits a Python interpreter with Django loaded; the process cap (per real uid,
#: counted by the kernel) only stops fork bombs.
CPU_SECONDS_MARGIN = 5
MAX_ADDRESS_SPACE_BYTES = 2 * 1024**3
MAX_PROCESSES = 512
MAX_FILE_BYTES = 64 * 1024**2
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36
#: The environment variable naming one run; its descendants inherit it.
RUN_TOKEN = "LOOPX_SANDBOX_RUN"  # noqa: S105 - a variable name, not a secret
#: Capabilities a root server's provider child loses before exec: each of them lets a
#: same-user process read a non-dumpable process's ``/proc/<pid>/environ`` or memory
#: (CAP_SYS_PTRACE, CAP_SYS_ADMIN, CAP_PERFMON), or load code into the kernel
#: (CAP_SYS_MODULE, CAP_SYS_RAWIO, CAP_BPF).
DROPPED_CAPABILITIES = (16, 17, 19, 21, 38, 39)

_dumpable_lock = threading.Lock()
_non_dumpable: bool | None = None
_libc = None


_reaping_lock = threading.Lock()
_reaping = 0


@contextlib.contextmanager
def _subreaper():
    """This process is a child subreaper while any run is in progress, so what a run's
    child leaves behind (a double-forked grandchild) is re-parented here and reaped by
    ``reap_orphans``. Only while: set for good, every orphan of any other child this
    process starts (the hook workers' grandchildren) would be left here as a zombie."""
    global _reaping
    with _reaping_lock:
        _reaping += 1
        if _reaping == 1 and _libc is not None:
            _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    try:
        yield
    finally:
        with _reaping_lock:
            _reaping -= 1
            if _reaping == 0 and _libc is not None:
                _libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def mark_non_dumpable() -> bool:
    """Mark this process non-dumpable once (Linux ``prctl``); ``False`` where unsupported.

    A non-dumpable process's ``/proc/<pid>/environ``, ``mem`` and ``ptrace`` are closed to
    other processes of the same user, which is what a provider child is.
    """
    global _non_dumpable, _libc
    with _dumpable_lock:
        if _non_dumpable is None:
            _non_dumpable = False
            try:
                _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
                _non_dumpable = _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
            except (OSError, AttributeError):
                _libc, _non_dumpable = None, False
        return _non_dumpable


def _limit_child(cpu_seconds: int):
    """``preexec_fn``: resource limits applied in the child before ``exec``."""

    def apply() -> None:
        libc = _libc
        if libc is not None:
            # No privilege gain through setuid programs; and a root server's child loses
            # the capabilities that would bypass the parent's non-dumpable mark.
            libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            if os.geteuid() == 0:
                for capability in DROPPED_CAPABILITIES:
                    libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)
        if resource is None:
            return
        for name, value in (
            ("RLIMIT_CPU", cpu_seconds),
            ("RLIMIT_AS", MAX_ADDRESS_SPACE_BYTES),
            ("RLIMIT_NPROC", MAX_PROCESSES),
            ("RLIMIT_FSIZE", MAX_FILE_BYTES),
            ("RLIMIT_CORE", 0),
        ):
            limit = getattr(resource, name, None)
            if limit is None:
                continue
            with contextlib.suppress(ValueError, OSError):
                _soft, hard = resource.getrlimit(limit)
                value = value if hard == resource.RLIM_INFINITY else min(value, hard)
                resource.setrlimit(limit, (value, value))

    return apply


@dataclass(frozen=True)
class RunResult:
    """Outcome of one provider run: ``failure_kind`` is ``None`` on a clean exit 0."""

    failure_kind: str | None
    stdout: bytes = b""


def minimal_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8"}
    if extra:
        env.update(extra)
    return env


def _kill_group(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        process.kill()


def _feed(process: subprocess.Popen, data: bytes) -> None:
    with contextlib.suppress(OSError, ValueError):
        process.stdin.write(data)
    with contextlib.suppress(OSError, ValueError):
        process.stdin.close()


def sandbox_user() -> tuple[int, int] | None:
    """``(uid, gid)`` a root server's children run as (``LOOPX_SANDBOX_USER``, default
    ``nobody``); ``None`` when this process is not root (its children already lack root),
    when the setting is empty (the operator keeps children as the server's user: only
    where the extensions' programs are not executable by another user) or the user does
    not exist."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    import pwd

    name = os.environ.get("LOOPX_SANDBOX_USER", "nobody")
    if not name:
        return None
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return None
    if entry.pw_uid == 0:
        return None
    return entry.pw_uid, entry.pw_gid


def run(
    argv: list[str],
    *,
    request: bytes,
    timeout_seconds: float,
    env: dict[str, str] | None = None,
    max_stdout: int = MAX_STDOUT_BYTES,
    as_server: bool = False,
) -> RunResult:
    """Run ``argv`` once with ``request`` on stdin and return its bounded stdout.

    The working directory is always a fresh scratch directory: no caller chooses it.
    ``as_server``: the built-in provider (the server's own code) keeps the server's user.
    """
    mark_non_dumpable()
    user = None if as_server else sandbox_user()
    scratch = tempfile.mkdtemp(prefix="loopx-provider-")
    if user is not None:
        os.chown(scratch, *user)
    token = secrets.token_hex(16)
    env = {**(minimal_env() if env is None else env), RUN_TOKEN: token}
    try:
        with _subreaper():
            try:
                return _run_in(argv, request, timeout_seconds, env, max_stdout, scratch, user)
            finally:
                reap_orphans(token, user)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _orphans(token: str, user: tuple[int, int] | None) -> list[int]:
    """This process's children that belong to the run ``token`` (re-parented here by the
    subreaper mark): the token in their environment, or, under a root server, running as
    the sandbox user (a grandchild that cleared its environment)."""
    me, found = os.getpid(), []
    marker = f"{RUN_TOKEN}={token}".encode()
    for entry in os.scandir("/proc") if os.path.isdir("/proc") else ():
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", "rb") as status:
                fields = dict(
                    line.split(b":", 1) for line in status.read().splitlines() if b":" in line
                )
            if int(fields[b"PPid"]) != me:
                continue
            uid = int(fields[b"Uid"].split()[0])
            if user is not None and uid == user[0]:
                found.append(int(entry.name))
                continue
            with open(f"/proc/{entry.name}/environ", "rb") as environ:
                if marker in environ.read().split(b"\0"):
                    found.append(int(entry.name))
        except (OSError, KeyError, ValueError):
            continue
    return found


def reap_orphans(token: str, user: tuple[int, int] | None) -> int:
    """Kill and reap every orphan of the run ``token`` until none is left; the count."""
    killed = 0
    while True:
        pids = _orphans(token, user)
        if not pids:
            return killed
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
            killed += 1


def _spawn(argv, env, scratch, timeout_seconds, user) -> subprocess.Popen:
    ids = {} if user is None else {"user": user[0], "group": user[1], "extra_groups": []}
    return subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=scratch,
        close_fds=True,
        pass_fds=(),
        start_new_session=True,
        preexec_fn=_limit_child(int(timeout_seconds) + CPU_SECONDS_MARGIN),
        **ids,
    )


def _run_in(argv, request, timeout_seconds, env, max_stdout, scratch, user) -> RunResult:
    deadline = time.monotonic() + timeout_seconds
    try:
        process = _spawn(argv, env, scratch, timeout_seconds, user)
    except (OSError, ValueError, subprocess.SubprocessError):
        return RunResult(EXECUTION_FAILED)

    writer = threading.Thread(target=_feed, args=(process, request), daemon=True)
    writer.start()
    chunks: list[bytes] = []
    size = 0
    failure: str | None = None
    fd = process.stdout.fileno()
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    failure = TIMED_OUT
                    break
                if not selector.select(remaining):
                    continue
                chunk = os.read(fd, _CHUNK)
                if not chunk:
                    break
                size += len(chunk)
                if size > max_stdout:
                    failure = RESPONSE_TOO_LARGE
                    break
                chunks.append(chunk)
        except OSError:
            failure = EXECUTION_FAILED
    if failure is None:
        try:
            process.wait(timeout=max(deadline - time.monotonic(), 0.001))
        except subprocess.TimeoutExpired:
            failure = TIMED_OUT
    # Stray children die with the group, whatever happened.
    _kill_group(process)
    process.stdout.close()
    process.wait()
    writer.join(timeout=1)
    if failure is not None:
        return RunResult(failure)
    if process.returncode != 0:
        return RunResult(NONZERO_EXIT)
    return RunResult(None, b"".join(chunks))
