"""The isolated dispatcher: admissibility, input projection, supervised invocation.

Nothing here writes to the database; ``hooks.services.phase`` records what this module
decides. Each provider invocation runs where its wall-clock timeout is enforced
(``hooks.isolation``: by default a child process, killed when ``timeout_ms`` passes, so a
hung provider holds nothing past its timeout and is recorded as ``producer_timed_out``).
When every invocation slot of this process is taken (``settings.LOOPX_HOOK_WORKERS``),
later hooks fail at once with ``dispatch_budget_exhausted``
(``process:worker_pool_exhausted``) — the settlement never waits for a slot. Every
provider failure becomes one compact failure code; nothing a provider raises or prints
reaches a receipt.
"""

import json
import logging
from dataclasses import dataclass

from hooks import boundary, contracts, isolation
from hooks import errors as codes
from hooks.errors import ContractViolation
from hooks.models import DurableWritebackReceipt
from hooks.registry import (
    MAX_HOOKS_PER_PHASE,
    MAX_PHASE_INTENTS,
    MAX_PHASE_TIMEOUT_MS,
    InstalledHook,
)
from loopx_site.core.canonical import canonical_bytes, digest_ref

logger = logging.getLogger("loopx.hooks")

# The per-phase ceilings (MAX_HOOKS_PER_PHASE, MAX_PHASE_TIMEOUT_MS, MAX_PHASE_INTENTS) are
# defined with the registry, which refuses a hook that could never fit them; here they are
# reserved in hook_id order from the declared budgets, so they are deterministic and one
# hook's failure never frees or consumes another's slot.


#: Failure reason of a hook not run because every invocation slot of this process was
#: busy (``hooks.isolation``). It is a condition of this process, not an attempt of the
#: provider: it never uses up ``max_attempts`` and a later phase (``hooks replay``) runs
#: the hook again.
POOL_EXHAUSTED = "process:worker_pool_exhausted"


# -- admissibility ----------------------------------------------------------------------
def checkpoint_digest(receipt: DurableWritebackReceipt) -> str:
    return digest_ref(contracts.receipt_core(receipt))


def inadmissible_reason(receipt: DurableWritebackReceipt) -> str | None:
    """Why this receipt may not dispatch hooks, or ``None`` (RFC 5.1)."""
    settlement = receipt.settlement
    identities = (
        settlement.goal.goal_id,
        settlement.agent.agent_id,
        settlement.todo.todo_id,
        settlement.turn_instance_id,
        settlement.effect_id,
    )
    if not all(isinstance(v, str) and v for v in identities):
        return "identity_incomplete"
    if receipt.effect_id != settlement.effect_id:
        return "effect_mismatch"
    if receipt.state != receipt.State.COMMITTED or receipt.committed_at is None:
        return "receipt_not_committed"
    if not receipt.checkpoint_digest or receipt.checkpoint_digest != checkpoint_digest(receipt):
        return "checkpoint_not_durable"
    if not settlement.post_writeback_hooks_enabled:
        return "phase_disabled"
    return None


def dispatch_id_for(receipt: DurableWritebackReceipt, hook: InstalledHook) -> str:
    return contracts.dispatch_id(
        receipt_id=receipt.receipt_id,
        hook_id=hook.hook_id,
        registration_schema_version=contracts.REGISTRATION_SCHEMA,
        event_kind=receipt.event_kind,
        registration_digest=hook.registration_digest,
    )


# -- outcomes ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Outcome:
    """What one evaluation of one hook produced (before it is journalled)."""

    hook: InstalledHook
    dispatch_id: str
    status: str  # accepted | not_applicable | failed
    failure_code: str | None = None
    failure_reason: str = ""
    result: dict | None = None
    invoked: bool = False

    @property
    def result_digest(self) -> str:
        return digest_ref(self.result) if self.result is not None else ""


def failed(hook, dispatch_id, code, reason, *, invoked=False) -> Outcome:
    return Outcome(hook, dispatch_id, "failed", code, reason[:200], None, invoked)


def plan_budgets(hooks: list[InstalledHook]) -> dict[str, str]:
    """hook_id → ``dispatch_budget_exhausted`` reason for hooks past a phase ceiling."""
    exhausted: dict[str, str] = {}
    used_hooks = used_ms = used_intents = 0
    for hook in hooks:
        if not hook.valid:
            continue
        budget = hook.registration["budget"]
        if used_hooks + 1 > MAX_HOOKS_PER_PHASE:
            exhausted[hook.hook_id] = "phase:max_hooks"
        elif used_ms + budget["timeout_ms"] > MAX_PHASE_TIMEOUT_MS:
            exhausted[hook.hook_id] = "phase:max_wall_time"
        elif used_intents + budget["max_intents_per_dispatch"] > MAX_PHASE_INTENTS:
            exhausted[hook.hook_id] = "phase:max_intents"
        else:
            used_hooks += 1
            used_ms += budget["timeout_ms"]
            used_intents += budget["max_intents_per_dispatch"]
    return exhausted


def evaluate(
    receipt: DurableWritebackReceipt,
    hook: InstalledHook,
    *,
    budget_reason: str | None = None,
) -> Outcome:
    """Run one hook for one admissible receipt under its budgets; never raises."""
    dispatch_id = dispatch_id_for(receipt, hook)
    if not hook.valid:
        return failed(hook, dispatch_id, codes.REGISTRATION_REJECTED, hook.rejection)
    if budget_reason:
        return failed(hook, dispatch_id, codes.DISPATCH_BUDGET_EXHAUSTED, budget_reason)
    payload = contracts.hook_input(
        receipt, hook.hook_id, hook.capability_id, hook.registration, dispatch_id
    )
    problems = boundary.violations(
        {"source": payload["source"], "projection": payload["projection"]}, path="input"
    )
    if problems:
        return failed(hook, dispatch_id, codes.INPUT_BOUNDARY_REJECTED, problems[0])
    return invoke(hook, dispatch_id, canonical_bytes(payload))


def invoke(hook: InstalledHook, dispatch_id: str, input_bytes: bytes) -> Outcome:
    """Run the provider where its timeout is enforced (``hooks.isolation``), then check
    its result against the contract and the byte budget."""
    budget = hook.registration["budget"]
    produced = isolation.run(
        hook.provider,
        input_bytes,
        hook_id=hook.hook_id,
        timeout_s=budget["timeout_ms"] / 1000.0,
        max_bytes=budget["max_result_bytes"],
    )
    if produced is None:
        logger.warning("hook %s not run: worker pool exhausted", hook.hook_id)
        return failed(hook, dispatch_id, codes.DISPATCH_BUDGET_EXHAUSTED, POOL_EXHAUSTED)
    if produced.code == codes.PRODUCER_TIMED_OUT:
        logger.info("hook %s timed out", hook.hook_id)
    elif produced.code:
        logger.info("hook %s failed: %s", hook.hook_id, produced.reason)
    if produced.code:
        return failed(hook, dispatch_id, produced.code, produced.reason, invoked=True)
    try:
        result = contracts.validate_result(
            json.loads(produced.data),
            registration=hook.registration,
            dispatch_id=dispatch_id,
            intent_contracts=hook.intent_contracts,
        )
    except ContractViolation as exc:
        return failed(hook, dispatch_id, exc.code, exc.reason, invoked=True)
    except ValueError:  # not JSON after all (a cut message from a host that reaps children)
        return failed(
            hook, dispatch_id, codes.RESULT_CONTRACT_REJECTED, "result:not_json", invoked=True
        )
    problems = boundary.violations(result, path="result", max_bytes=budget["max_result_bytes"])
    if problems:
        return failed(hook, dispatch_id, codes.RESULT_CONTRACT_REJECTED, problems[0], invoked=True)
    status = "accepted" if result["status"] == "proposed" else "not_applicable"
    return Outcome(hook, dispatch_id, status, None, "", result, True)
