"""The bounded subprocess runner shared by extension and legacy providers.

One request on stdin, one response on stdout:

* the program runs directly (never a shell) in a new session, so it leads its own process
  group; on timeout, on an oversized response and after it exits, the whole group is
  killed (``os.killpg`` with SIGKILL) — children it spawned do not outlive it;
* a wall-clock deadline covers start, stdin, stdout and exit;
* stdout is read incrementally and capped: one byte past the cap kills the group;
* stderr goes to ``/dev/null`` — it is never read, logged or copied;
* the environment is minimal: ``PATH`` and ``LANG`` plus only what the caller passes
  explicitly (the built-in provider's database settings), never the parent's secrets.

Every failure is reduced to one of the pinned failure kinds; no exception text, exit
status or output of the provider leaves this module except the accepted stdout bytes.
"""

import contextlib
import os
import selectors
import signal
import subprocess
import threading
import time
from dataclasses import dataclass

MAX_STDOUT_BYTES = 256_000
_CHUNK = 65_536

EXECUTION_FAILED = "execution_failed"
TIMED_OUT = "timed_out"
NONZERO_EXIT = "nonzero_exit"
RESPONSE_TOO_LARGE = "response_too_large"


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


def run(
    argv: list[str],
    *,
    request: bytes,
    timeout_seconds: float,
    env: dict[str, str] | None = None,
    cwd: str | os.PathLike | None = None,
    max_stdout: int = MAX_STDOUT_BYTES,
) -> RunResult:
    """Run ``argv`` once with ``request`` on stdin and return its bounded stdout."""
    deadline = time.monotonic() + timeout_seconds
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=minimal_env() if env is None else env,
            cwd=cwd,
            close_fds=True,
            start_new_session=True,
        )
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
