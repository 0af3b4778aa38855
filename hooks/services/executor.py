"""The governed executor service: admit, reject and execute outbox intents.

Hook recording and effect execution are separate transactions, so the executor
deduplicates again on ``intent_id``: one ``IntentExecution`` per (executor, intent)
(unique constraint), taken under a row lock on the intent. An intent moves
``pending → admitted → executed`` or ``pending|admitted → rejected``; a decided intent is
never decided again. No executor performs a network or sink call.

``execute_intents`` returns an ``ExecutionRun`` (its ``Decision`` rows); the adapters render
it with ``hooks.documents.execution_run``. The packet an executor is given is the
contract's (``hooks.contracts.executor_packet``).
"""

from dataclasses import asdict, dataclass

from django.db import transaction

from hooks import contracts, executors
from hooks.errors import AREA, HookError, error
from hooks.models import HookIntent, IntentExecution
from loopx_site.core import access, clock, progress
from loopx_site.core.canonical import digest_ref
from loopx_site.core.rows import get_or_create_once
from loopx_site.core.validation import require_identifier

MAX_EVENTS = 200
OPEN = (HookIntent.Status.PENDING, HookIntent.Status.ADMITTED)


def _executor(name: str) -> executors.Executor:
    found = executors.get(name) if isinstance(name, str) else None
    if found is None:
        raise error(
            "unknown_executor",
            f"executor must be one of {', '.join(sorted(executors.EXECUTORS))}",
            field="executor",
        )
    return found


@dataclass
class Decision:
    intent_id: str
    action: str  # admitted | rejected | executed | deduplicated | skipped
    reason: str | None
    decision: dict | None

    def public(self) -> dict:
        return asdict(self)  # every field, in declaration order


@dataclass(frozen=True)
class ExecutionRun:
    """What one executor run decided (or, a preview, would decide)."""

    executor: executors.Executor
    execute: bool
    used: int  # intents taken within the run's budget
    deferred: int  # open intents left over by the budget
    decisions: list[Decision]


def _events(executor_id: str, intent: HookIntent) -> list[dict]:
    """Durable public-safe rollout events: this executor's earlier decisions for the Goal."""
    rows = (
        IntentExecution.objects.filter(
            executor_id=executor_id,
            intent__goal_id=intent.goal_id,
            intent__intent_kind=intent.intent_kind,
            decision__isnull=False,
        )
        .exclude(intent=intent)
        .select_related("intent")
        .order_by("recorded_at", "pk")[:MAX_EVENTS]
    )
    return [{"intent_id": r.intent.intent_id, **(r.decision or {})} for r in rows]


def _record(executor, intent: HookIntent, *, admission: str, reason: str = "", decision=None):
    now = clock.now()
    fields = {
        "admission": admission,
        "reason": reason,
        "decision": decision,
        "decision_digest": digest_ref(decision) if decision is not None else "",
        "recorded_at": now,
    }
    execution, created = get_or_create_once(
        IntentExecution.objects, executor_id=executor.executor_id, intent=intent, defaults=fields
    )
    if not created and decision is not None and execution.decision is None:
        IntentExecution.objects.filter(pk=execution.pk, decision__isnull=True).update(
            decision=decision, decision_digest=digest_ref(decision), recorded_at=now
        )
    return execution


def _set_status(intent: HookIntent, status: str, reason: str = "") -> None:
    HookIntent.objects.filter(pk=intent.pk).update(
        status=status, status_reason=reason, updated_at=clock.now()
    )


def _process(executor, intent_pk: int, *, run: bool) -> Decision:
    """Admit (and with ``run``, execute) one intent under a row lock."""
    with transaction.atomic():
        intent = (
            HookIntent.objects.select_for_update()
            .select_related("dispatch", "goal", "agent")
            .get(pk=intent_pk)
        )
        packet = contracts.executor_packet(intent)
        if intent.status not in OPEN:
            done = IntentExecution.objects.filter(
                executor_id=executor.executor_id, intent=intent
            ).first()
            return Decision(
                intent.intent_id, "deduplicated", intent.status, done.decision if done else None
            )
        reason = executor.admission(packet)
        if reason:
            _record(executor, intent, admission="rejected", reason=reason)
            _set_status(intent, HookIntent.Status.REJECTED, reason)
            return Decision(intent.intent_id, "rejected", reason, None)
        if not run:
            _record(executor, intent, admission="admitted")
            _set_status(intent, HookIntent.Status.ADMITTED)
            return Decision(intent.intent_id, "admitted", None, None)
        decision = executor.decide(packet, _events(executor.executor_id, intent))
        _record(executor, intent, admission="admitted", decision=decision)
        _set_status(intent, HookIntent.Status.EXECUTED)
        return Decision(intent.intent_id, "executed", None, decision)


def _preview(executor, intent: HookIntent) -> Decision:
    packet = contracts.executor_packet(intent)
    reason = executor.admission(packet)
    if reason:
        return Decision(intent.intent_id, "would_reject", reason, None)
    decision = executor.decide(packet, _events(executor.executor_id, intent))
    return Decision(intent.intent_id, "would_execute", None, decision)


def execute_intents(
    *,
    executor: str,
    execute: bool = False,
    limit: int | None = None,
    intent_ids: list[str] | None = None,
    goal_id: str | None = None,
) -> ExecutionRun:
    """Admit pending/admitted intents against the executor's allowlist and budget, feed
    them to its reducer and record the decision. Preview (default) writes nothing."""
    spec = _executor(executor)
    budget = spec.max_intents_per_run
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise error("invalid_argument", "limit must be a positive integer", field="limit")
        budget = min(budget, limit)
    qs = HookIntent.objects.select_related("dispatch", "goal", "agent").filter(status__in=OPEN)
    if goal_id is not None:
        require_identifier(goal_id, "goal_id", area=AREA)
        qs = qs.filter(goal__goal_id=goal_id)
    if intent_ids:
        qs = qs.filter(intent_id__in=intent_ids)
    open_count = qs.count()
    batch = list(qs.order_by("created_at", "pk")[:budget])
    if execute:
        admitted = progress.track(batch, desc="execute intents", unit="intent")
        decisions = [_process(spec, i.pk, run=True) for i in admitted]
    else:
        decisions = [_preview(spec, i) for i in batch]
    return ExecutionRun(
        executor=spec,
        execute=execute,
        used=len(batch),
        deferred=max(0, open_count - len(batch)),
        decisions=decisions,
    )


def _locked_ids(intent_ids: list[str]) -> list[HookIntent]:
    found = list(HookIntent.objects.filter(intent_id__in=intent_ids))
    missing = sorted(set(intent_ids) - {i.intent_id for i in found})
    if missing:
        raise error("intent_not_found", "No such outbox intent", field="intent_id")
    return found


def admit_intents(*, executor: str, intent_ids: list[str], operator: access.Caller) -> list[dict]:
    """Operator admission through the executor's own policy (no execution yet); the
    operator's shell, or an account holding ``hooks.change_hookintent``."""
    access.require_operator_permission(operator, "hooks.change_hookintent", error=HookError)
    spec = _executor(executor)
    return [_process(spec, i.pk, run=False).public() for i in _locked_ids(intent_ids)]


def reject_intents(
    *,
    executor: str,
    intent_ids: list[str],
    operator: access.Caller,
    reason: str = "operator_rejected",
) -> list[dict]:
    """Operator rejection: ``pending|admitted → rejected``; decided intents stay as they are
    (the operator's shell, or an account holding ``hooks.change_hookintent``)."""
    access.require_operator_permission(operator, "hooks.change_hookintent", error=HookError)
    spec = _executor(executor)
    out = []
    for found in _locked_ids(intent_ids):
        with transaction.atomic():
            intent = HookIntent.objects.select_for_update().get(pk=found.pk)
            if intent.status not in OPEN:
                out.append(Decision(intent.intent_id, "deduplicated", intent.status, None))
                continue
            _record(spec, intent, admission="rejected", reason=reason)
            IntentExecution.objects.filter(executor_id=spec.executor_id, intent=intent).update(
                admission="rejected", reason=reason
            )
            _set_status(intent, HookIntent.Status.REJECTED, reason)
            out.append(Decision(intent.intent_id, "rejected", reason, None))
    return [d.public() for d in out]
