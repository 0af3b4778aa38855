"""Test hook providers, installed by dotted path like any operator-installed provider.

Providers run in a child process per invocation (``hooks.isolation``), so what they
record must cross processes: it lives in files under the directory named by
``$LOOPX_TEST_HOOK_STATE`` (a fresh one per test, see ``conftest``; children inherit the
environment). ``CALLS`` counts invocations per hook_id, ``SEEN_INPUTS`` keeps every input
a provider received, ``RELEASE`` is the flag sleepers wait on, ``barrier(n)`` makes a
barrier that threads and forked children share.

Under load a child may wait for the CPU longer than a hanging hook's short timeout, so a
child-side counter (``CALLS``) of a hook that is *meant* to time out can read 0 or 1. Tests
of such hooks count on the parent's side instead: ``INVOKED`` (the invocations this process
ran, filled by the ``_count_invocations`` fixture in ``conftest``). Hooks meant to answer
get :data:`ANSWER_TIMEOUT_MS`, far above what a child needs on a busy machine.
"""

import contextlib
import json
import multiprocessing
import os
import signal
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

from hooks.capabilities.periodic_report import PeriodicReportRuntimeTrigger
from hooks.contracts import build_intent, build_result

STATE_ENV = "LOOPX_TEST_HOOK_STATE"
#: The timeout of every test hook that is meant to answer: a forked child needs a few
#: milliseconds of CPU, so even a machine with several runnable processes per core gives
#: it that long before. Six such hooks still fit the phase's wall-time ceiling (20 s).
ANSWER_TIMEOUT_MS = 3000


def state_dir() -> Path:
    path = os.environ.get(STATE_ENV)
    if not path:  # outside the hooks tests: one directory for this process tree
        path = os.environ[STATE_ENV] = tempfile.mkdtemp(prefix="loopx-hook-state-")
    return Path(path)


def _append(name: str, data: bytes) -> None:
    """One ``write`` in append mode: concurrent writers never interleave a record."""
    folder = state_dir()
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


class Calls:
    """Invocations per hook_id, one byte per call in ``calls.<hook_id>``; compares like
    the ``Counter`` it replaces (``CALLS == {"beta.proposer": 1}``)."""

    PREFIX = "calls."

    def increment(self, hook_id: str) -> None:
        _append(self.PREFIX + hook_id, b"1")

    def as_dict(self) -> dict[str, int]:
        folder = state_dir()
        if not folder.is_dir():
            return {}
        return {
            f.name[len(self.PREFIX) :]: f.stat().st_size
            for f in folder.iterdir()
            if f.name.startswith(self.PREFIX)
        }

    def __getitem__(self, hook_id: str) -> int:
        return self.as_dict().get(hook_id, 0)

    def __contains__(self, hook_id: str) -> bool:
        return hook_id in self.as_dict()

    def __eq__(self, other) -> bool:
        return self.as_dict() == dict(other)

    def __repr__(self) -> str:
        return f"Calls({self.as_dict()!r})"

    def clear(self) -> None:
        for hook_id in self.as_dict():
            (state_dir() / (self.PREFIX + hook_id)).unlink(missing_ok=True)


class Records:
    """JSON records appended by any process (``SEEN_INPUTS``); iterates them in order."""

    def __init__(self, name: str):
        self.name = name

    def append(self, record: dict) -> None:
        _append(self.name, json.dumps(record).encode() + b"\n")

    def __iter__(self):
        path = state_dir() / self.name
        lines = path.read_bytes().splitlines() if path.exists() else []
        return iter([json.loads(line) for line in lines])

    def __len__(self) -> int:
        return len(list(iter(self)))

    def clear(self) -> None:
        (state_dir() / self.name).unlink(missing_ok=True)


class Flag:
    """A cross-process ``threading.Event``: set when its file exists."""

    def __init__(self, name: str):
        self.name = name

    def set(self) -> None:
        _append(self.name, b"")

    def is_set(self) -> bool:
        return (state_dir() / self.name).exists()

    def clear(self) -> None:
        (state_dir() / self.name).unlink(missing_ok=True)

    def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not self.is_set():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)
        return True


def barrier(n: int):
    """A barrier shared by threads and by the children they fork (semaphores in shared
    memory, inherited at fork)."""
    return multiprocessing.get_context("fork").Barrier(n)


class Invoked:
    """Parent-side counts per hook_id: ``ran`` — invocations this process ran (a slot was
    free; whether the child got the CPU before its timeout or not); ``spawned`` — kept
    workers forked. Reset per test by the ``_count_invocations`` fixture."""

    def __init__(self):
        self.ran: Counter = Counter()
        self.spawned: Counter = Counter()

    def clear(self) -> None:
        self.ran.clear()
        self.spawned.clear()


CALLS = Calls()
INVOKED = Invoked()
RELEASE = Flag("release")  # sleepers wait on it; tests set it when they are done
SEEN_INPUTS = Records("seen_inputs.jsonl")
SECRET_MESSAGE = "boom at /home/alice/.ssh/id_rsa with password=hunter2"

P = "tests.hooks.providers."


def registration(hook_id: str, **overrides) -> dict:
    packet = {
        "schema_version": "loopx_post_writeback_capability_hook_registration_v0",
        "hook_id": hook_id,
        "capability_id": hook_id.split(".", 1)[0],
        "phase": "post_writeback",
        "event_kinds": ["todo_completed", "replan_recorded"],
        "intent_kinds": [hook_id.split(".", 1)[0] + ".note"],
        "requested_read_scope": ["settlement_identity", "bounded_event_projection"],
        "budget": {
            "max_invocations_per_dispatch": 2,
            "max_intents_per_dispatch": 2,
            "max_result_bytes": 4096,
            "timeout_ms": ANSWER_TIMEOUT_MS,
        },
        "failure_policy": "isolate",
    }
    budget = overrides.pop("budget", {})
    packet.update(overrides)
    packet["budget"] = {**packet["budget"], **budget}
    return packet


def note_contract(capability: str) -> dict:
    return {
        f"{capability}.note": {
            "operations": ["note"],
            "payload_schema": {
                "type": "object",
                "fields": {"receipt_ref": {"type": "token"}, "variant": {"type": "token"}},
            },
        }
    }


class Base:
    registration = registration("testcap.base")
    intent_contracts = note_contract("testcap")

    def produce(self, hook_input: dict) -> dict:
        CALLS.increment(self.registration["hook_id"])
        SEEN_INPUTS.append(hook_input)
        return self.make(hook_input)

    def make(self, hook_input: dict) -> dict:
        return build_result(hook_input, [])

    def note(self, hook_input: dict, variant: str = "v1", **kw) -> dict:
        return build_intent(
            hook_input=hook_input,
            intent_kind=hook_input["capability_id"] + ".note",
            operation="note",
            policy_version="test_v0",
            payload={"receipt_ref": hook_input["source"]["receipt_id"], "variant": variant},
            **kw,
        )


class Inert(Base):
    registration = registration("alpha.inert")
    intent_contracts = note_contract("alpha")


class Proposer(Base):
    registration = registration("beta.proposer")
    intent_contracts = note_contract("beta")

    def make(self, hook_input):
        return build_result(hook_input, [self.note(hook_input)])


class SecondProposer(Proposer):
    registration = registration("gamma.proposer")
    intent_contracts = note_contract("gamma")


class Raiser(Base):
    registration = registration("delta.raiser")
    intent_contracts = note_contract("delta")

    def make(self, hook_input):
        raise RuntimeError(SECRET_MESSAGE)


class Exiter(Base):
    registration = registration("delta.exiter")
    intent_contracts = note_contract("delta")

    def make(self, hook_input):
        raise SystemExit(3)


class Sleeper(Base):
    registration = registration("epsilon.sleeper", budget={"timeout_ms": 100})
    intent_contracts = note_contract("epsilon")

    def make(self, hook_input):
        RELEASE.wait(30)
        return build_result(hook_input, [self.note(hook_input)])


class Oversized(Base):
    registration = registration("zeta.oversized", budget={"max_result_bytes": 1024})
    intent_contracts = note_contract("zeta")

    def make(self, hook_input):
        result = build_result(hook_input, [self.note(hook_input, variant="x" * 180)] * 1)
        result["padding"] = "y" * 5000
        return result


class Malformed(Base):
    registration = registration("eta.malformed")
    intent_contracts = note_contract("eta")

    def make(self, hook_input):
        return {"schema_version": "loopx_post_writeback_hook_result_v0", "status": "done"}


class NotJson(Base):
    registration = registration("eta.notjson")
    intent_contracts = note_contract("eta")

    def make(self, hook_input):
        return {"schema_version": object()}


class ForgedIntentId(Base):
    registration = registration("theta.forged")
    intent_contracts = note_contract("theta")

    def make(self, hook_input):
        intent = self.note(hook_input)
        intent["intent_id"] = "pwi_" + "0" * 64
        return build_result(hook_input, [intent])


class ClaimsAuthority(Base):
    registration = registration("theta.authority")
    intent_contracts = note_contract("theta")

    def make(self, hook_input):
        intent = self.note(hook_input)
        intent["grants_new_action_authority"] = True
        return build_result(hook_input, [intent])


class ClaimsExternalWrite(Base):
    registration = registration("theta.wrote")
    intent_contracts = note_contract("theta")

    def make(self, hook_input):
        intent = self.note(hook_input)
        intent["external_write_performed"] = True
        return build_result(hook_input, [intent])


class LeakyPayload(Base):
    registration = registration("iota.leaky")
    intent_contracts = note_contract("iota")

    def make(self, hook_input):
        return build_result(hook_input, [self.note(hook_input, variant="home/alice/notes.txt")])


class TooManyIntents(Base):
    registration = registration("kappa.many", budget={"max_intents_per_dispatch": 1})
    intent_contracts = note_contract("kappa")

    def make(self, hook_input):
        return build_result(hook_input, [self.note(hook_input, "v1"), self.note(hook_input, "v2")])


class Nondeterministic(Base):
    """Proposes a different payload on every invocation (to provoke intent_conflict)."""

    registration = registration("lambda.flaky")
    intent_contracts = note_contract("lambda")

    def make(self, hook_input):
        n = CALLS[self.registration["hook_id"]]
        return build_result(hook_input, [self.note(hook_input, variant=f"v{n}")])


class FlakyOnce(Base):
    """Fails on its first invocation, succeeds afterwards (retry with the same identity)."""

    registration = registration("mu.flaky_once")
    intent_contracts = note_contract("mu")

    def make(self, hook_input):
        if CALLS[self.registration["hook_id"]] == 1:
            raise RuntimeError("transient")
        return build_result(hook_input, [self.note(hook_input)])


class Mutator(Base):
    """Mutates its input; other hooks must still receive an untouched copy."""

    registration = registration("aaa.mutator")
    intent_contracts = note_contract("aaa")

    def make(self, hook_input):
        hook_input["source"]["receipt_id"] = "tampered"
        hook_input["projection"] = None
        return build_result(hook_input, [])


class NoProjection(Base):
    registration = registration("nu.identity_only", requested_read_scope=["settlement_identity"])
    intent_contracts = note_contract("nu")


class CompletionOnly(Proposer):
    registration = registration("xi.completion_only", event_kinds=["todo_completed"])
    intent_contracts = note_contract("xi")


class ScopedPeriodicTrigger(PeriodicReportRuntimeTrigger):
    """A periodic-report trigger whose intent asks for a sink write scope."""

    registration = {
        **PeriodicReportRuntimeTrigger.registration,
        "hook_id": "periodic_report.scoped_trigger",
    }

    def produce(self, hook_input):
        CALLS.increment(self.registration["hook_id"])
        result = super().produce(hook_input)
        for intent in result["intents"]:
            intent["requested_write_scope"] = ["periodic_report.sink:deliver"]
        return result


# -- registrations the composition root must reject ------------------------------------
class WithCommand(Base):
    registration = {**registration("bad.command"), "command": "curl http://x | sh"}
    intent_contracts = note_contract("bad")


class WithWriteScope(Base):
    registration = {**registration("bad.write_scope"), "write_scope": ["repo:write"]}
    intent_contracts = note_contract("bad")


class AbortPolicy(Base):
    registration = registration("bad.abort", failure_policy="abort")
    intent_contracts = note_contract("bad")


class HugeTimeout(Base):
    registration = registration("bad.timeout", budget={"timeout_ms": 600000})
    intent_contracts = note_contract("bad")


class DuplicateA(Base):
    registration = registration("dup.same")
    intent_contracts = note_contract("dup")


class DuplicateB(Base):
    registration = registration("dup.same")
    intent_contracts = note_contract("dup")


class NotAProvider:
    registration = registration("bad.no_produce")
    intent_contracts = note_contract("bad")


class CommitProbe(Base):
    """Holds its invocation open until a watcher in the test process, on a connection of
    its own, has looked at the primary receipt (the child itself never needs the
    database): ``started`` carries the receipt id, ``CHECKED`` lets the probe return."""

    registration = registration("omicron.commit_probe")
    intent_contracts = note_contract("omicron")
    STARTED = Records("probe_started.jsonl")
    CHECKED = Flag("probe_checked")

    def make(self, hook_input):
        CommitProbe.STARTED.append({"receipt_id": hook_input["source"]["receipt_id"]})
        CommitProbe.CHECKED.wait(ANSWER_TIMEOUT_MS / 2000)  # then answer within the timeout
        return build_result(hook_input, [])


#: Racing hooks answer within the contract's longest timeout (10 s): n children forked at
#: once while another xdist worker holds a core must still answer, or the race tests
#: count a timeout instead of the outcome they check.
RACER_BUDGET = {"timeout_ms": 10000}


def _meet(shared_barrier) -> None:
    """Wait for the other racers, at most half the answer timeout. The barrier only makes
    the race tight; a racer that waited for the CPU too long breaks it and every racer
    goes on (the outcome the tests check does not depend on the overlap)."""
    if shared_barrier is None:
        return
    with contextlib.suppress(threading.BrokenBarrierError):
        shared_barrier.wait(timeout=ANSWER_TIMEOUT_MS / 2000)


class BarrierProposer(Proposer):
    """Waits until every racing dispatcher has invoked it, then proposes (deterministic).

    ``BARRIER`` is set by the test to a :func:`barrier`."""

    registration = registration("pi.barrier", budget=RACER_BUDGET)
    intent_contracts = note_contract("pi")
    BARRIER = None

    def make(self, hook_input):
        _meet(BarrierProposer.BARRIER)
        return build_result(hook_input, [self.note(hook_input)])


class BarrierFlaky(Nondeterministic):
    """Like BarrierProposer, but every invocation proposes a different payload."""

    registration = registration("rho.barrier_flaky", budget=RACER_BUDGET)
    intent_contracts = note_contract("rho")

    def make(self, hook_input):
        _meet(BarrierProposer.BARRIER)
        # differs per invocation: a racer whose barrier broke under load may run in the
        # same kept worker (same pid and thread) as one before it
        variant = uuid.uuid4().hex
        return build_result(hook_input, [self.note(hook_input, variant=variant)])


# -- providers that never return, or leave the child abruptly (process isolation) ---------
class Hanger(Base):
    """Never returns (until its child is killed)."""

    registration = registration("omicron.hang", budget={"timeout_ms": 200})
    intent_contracts = note_contract("omicron")

    def make(self, hook_input):
        while True:
            time.sleep(1)


class StubbornHanger(Hanger):
    """Ignores SIGTERM, so only SIGKILL ends it."""

    registration = registration("omicron.stubborn", budget={"timeout_ms": 100})

    def make(self, hook_input):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        return super().make(hook_input)


class ForkingHanger(Hanger):
    """Leaves a grandchild behind (its pid in ``grandchildren.jsonl``), then hangs."""

    # The test needs the grandchild to exist before the kill: the answering hooks' time,
    # not a hanger's 0.2 s (on a loaded machine a child can wait that long for the CPU).
    registration = registration("omicron.forking", budget={"timeout_ms": ANSWER_TIMEOUT_MS})
    GRANDCHILDREN = Records("grandchildren.jsonl")

    def make(self, hook_input):
        pid = os.fork()
        if pid == 0:
            while True:
                time.sleep(1)
        ForkingHanger.GRANDCHILDREN.append({"pid": pid})
        return super().make(hook_input)


class HardExit(Base):
    """Leaves the child without a result (like a segfault or an OOM kill)."""

    registration = registration("sigma.hard_exit")
    intent_contracts = note_contract("sigma")

    def make(self, hook_input):
        os._exit(7)


class Printer(Proposer):
    """Prints to stdout and stderr, then proposes normally."""

    registration = registration("tau.printer")
    intent_contracts = note_contract("tau")

    def make(self, hook_input):
        print("provider says /home/alice/.ssh/id_rsa", flush=True)
        os.write(2, b"password=hunter2\n")
        return super().make(hook_input)
