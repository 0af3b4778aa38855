"""Issue 25: a hook child keeps no descriptor of the process that forked it.

``fork`` copies every descriptor open at that instant. Inside a threaded gunicorn worker
those are the keep-alive connections the other threads serve: a kept hook worker holding
a copy kept each connection open after gunicorn closed it (no FIN), HAProxy reused it and
the request waited on a socket nobody read — the cluster leg's hung settle retry. These
tests hold a real TCP connection open in this process while a hook child is forked, then
close it the way gunicorn does (a plain ``close``) and require its peer to see the end.
Every wait is bounded: a leaked descriptor fails the test, it does not hang it.
"""

import contextlib
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from loopx_site.engines import workers
from tests.hooks import providers
from tests.hooks.factories import TodoFactory, settle
from tests.hooks.test_isolation import _children, _codes, _no_children_left

ROOT = Path(__file__).resolve().parents[2]


class DescriptorRecorder(providers.Proposer):
    """Records what every descriptor of the process it runs in points at."""

    registration = providers.registration("psi.fds")
    intent_contracts = providers.note_contract("psi")
    SEEN = providers.Records("descriptors.jsonl")

    def make(self, hook_input):
        listing = {}
        for name in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):  # the listing's own descriptor, closed by now
                listing[name] = os.readlink(f"/proc/self/fd/{name}")
        DescriptorRecorder.SEEN.append({"pid": os.getpid(), "fds": listing})
        return super().make(hook_input)


@pytest.fixture
def before_children():
    """The children this process already had."""
    return _children()


@pytest.fixture
def connection():
    """A real loopback TCP connection: ``(served, peer)``, ``served`` being this process's
    end (a server's accepted client connection), ``peer`` the other."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        peer = socket.create_connection(listener.getsockname(), timeout=2)
        served, _ = listener.accept()
    yield served, peer
    served.close()
    peer.close()


def _sees_the_end(peer: socket.socket, seconds: float = 30.0) -> bool:
    """Whether the peer reads the end of the stream (FIN) within ``seconds``."""
    peer.settimeout(seconds)
    try:
        return peer.recv(1) == b""
    except TimeoutError:
        return False


pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")


@pytest.mark.parametrize("isolation_mode", ["worker", "process"])
def test_a_hook_child_holds_no_descriptor_of_its_parent_but_its_pipes(
    todo, install, settings, connection, isolation_mode
):
    settings.LOOPX_HOOK_ISOLATION = isolation_mode
    install(f"{__name__}.DescriptorRecorder")
    assert _codes(settle().payload) == {"psi.fds": None}
    (record,) = list(DescriptorRecorder.SEEN)
    assert record["pid"] != os.getpid()
    targets = record["fds"]
    assert {fd: targets[fd] for fd in ("0", "1", "2")} == dict.fromkeys(("0", "1", "2"), os.devnull)
    others = sorted(t for fd, t in targets.items() if fd not in ("0", "1", "2"))
    pipes = [t for t in others if t.startswith("pipe:")]
    # worker: its request and answer pipe ends; process: its answer pipe; plus /dev/null
    # (every inherited number points there) — no socket, no file of the parent
    assert len(pipes) == (2 if isolation_mode == "worker" else 1)
    assert set(others) - set(pipes) <= {os.devnull}
    assert not [t for t in others if t.startswith("socket:")]


def test_a_connection_closed_by_the_server_ends_for_its_peer_while_a_kept_worker_lives(
    agent, install, settings, connection, before_children
):
    """The cluster leg's hang in one process: gunicorn closes an idle keep-alive
    connection with a plain ``close``; a kept worker forked while it was open must not
    keep it open (its peer, HAProxy, must see the FIN, or it reuses a dead connection)."""
    settings.LOOPX_HOOK_ISOLATION = "worker"
    install("Proposer")
    served, peer = connection
    TodoFactory(goal=agent.goal, todo_id="t1", segment_ref="seg-1")
    assert _codes(settle("t1", "turn-1").payload) == {"beta.proposer": None}
    assert workers.idle_workers()  # the kept worker forked while ``served`` was open lives on
    served.close()
    assert _sees_the_end(peer)
    assert _no_children_left(before_children)


# The same in a threaded server: threads each serving a connection dispatch at once, the
# kept workers forked by one thread inheriting the connections of the others. Run in a
# subprocess with a timeout, so a hang (in the parent or a child) fails this test only.
THREADED = textwrap.dedent(
    """
    import json, logging, os, socket, sys, threading, time
    import django
    django.setup()
    from django.db import connection
    from hooks import isolation

    ROUNDS, THREADS = int(sys.argv[1]), int(sys.argv[2])
    logging.basicConfig(filename=sys.argv[3], level=logging.INFO)
    log = logging.getLogger("threaded-server")

    class Echo:
        def produce(self, hook_input):
            return {"n": hook_input["n"]}

    provider = Echo()
    listener = socket.create_server(("127.0.0.1", 0))
    failures, lock = [], threading.Lock()

    def serve(t):
        with connection.cursor() as cursor:  # a database connection open all along
            cursor.execute("SELECT 1")
        for r in range(ROUNDS):
            if t == 0:
                isolation.reset()  # retire the idle workers: forks again in every round
            peer = socket.create_connection(listener.getsockname(), timeout=2)
            served, _ = listener.accept()
            log.info("thread %s round %s", t, r)  # the logging lock, taken around forks
            produced = isolation.run(
                provider, json.dumps({"n": r}).encode(), hook_id="echo", timeout_s=5,
                max_bytes=1024,
            )
            ok = produced is not None and produced.data is not None
            ok = ok and json.loads(produced.data) == {"n": r}
            served.close()  # gunicorn's close of a finished keep-alive connection
            peer.settimeout(30)  # a FIN comes at once; the bound only ends a broken run
            try:
                ended = peer.recv(1) == b""
            except TimeoutError:
                ended = False
            peer.close()
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
                alive = cursor.fetchone() == (1,)
            if not (ok and ended and alive):
                with lock:
                    answer = "no_slot" if produced is None else produced.reason or ok
                    failures.append({"thread": t, "round": r, "answer": answer, "fin": ended})
        connection.close()

    threads = [threading.Thread(target=serve, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    isolation.reset()
    print(json.dumps({"failures": failures[:5], "failed": len(failures)}))
    """
)


@pytest.mark.slow
def test_threads_dispatching_at_once_leave_no_connection_of_another_thread_open(tmp_path):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "loopx_site.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'threaded.sqlite3'}",
        "LOOPX_HOOK_ISOLATION": "worker",
        "LOOPX_HOOK_WORKERS": "8",
    }
    t0 = time.monotonic()
    try:
        run = subprocess.run(
            [sys.executable, "-c", THREADED, "12", "4", str(tmp_path / "server.log")],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the threaded dispatch hung (120 s)")
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == {"failures": [], "failed": 0}
    assert time.monotonic() - t0 < 120
