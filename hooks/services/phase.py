"""The post-writeback hook phase and its sidecar journal.

``run_hook_phase(receipt)`` is called only after the primary transaction committed (by
``settle`` and by ``replay``), never inside it. It evaluates the admitted hooks in
``hook_id`` order (``hooks.dispatcher``), then journals every outcome in one sidecar
transaction, each under its own savepoint, and writes the phase checkpoint.

Journal rules (enforced by the unique ``dispatch_id`` / ``intent_id`` constraints plus a
row lock on the dispatch):

* no row yet → insert the dispatch receipt and its intents (``recorded``);
* same dispatch, same canonical result → no-op, original returned (``replayed``);
* same dispatch, different result → ``intent_conflict``: the original is kept, the
  conflict is counted on the row;
* a failed dispatch may be retried with the same identity while
  ``attempts < max_attempts`` (``retried``); a success never downgrades.

Nothing here can change the primary receipt, the Todo or the quota spend.
"""

import logging
from dataclasses import dataclass, field

from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import F

from hooks import contracts, dispatcher, registry
from hooks import errors as codes
from hooks.dispatcher import Outcome
from hooks.models import DurableWritebackReceipt, HookDispatch, HookIntent, HookPhaseCheckpoint
from loopx_site.core import clock, metrics
from loopx_site.core.rows import insert_once

logger = logging.getLogger("loopx.hooks")

SUCCESS = (HookDispatch.Status.ACCEPTED, HookDispatch.Status.NOT_APPLICABLE)


@dataclass
class Journalled:
    dispatch_id: str
    hook_id: str
    outcome: str  # recorded | replayed | retried | conflict | failed_again
    code: str | None
    invoked: bool

    def public(self) -> dict:
        return {
            "dispatch_id": self.dispatch_id,
            "hook_id": self.hook_id,
            "outcome": self.outcome,
            "code": self.code,
            "provider_invoked": self.invoked,
        }


@dataclass
class PhaseResult:
    status: str  # dispatched | disabled | not_admissible | deferred
    reason: str | None = None
    outcomes: list[Journalled] = field(default_factory=list)
    #: ``(dispatch, intent_ids)`` rows when the phase already knows them (fresh batch),
    #: else ``None``; ``hooks.documents.dispatches`` renders them
    dispatches: list[tuple[HookDispatch, list[str]]] | None = None

    @property
    def invoked(self) -> int:
        return sum(1 for o in self.outcomes if o.invoked)


# -- journal ------------------------------------------------------------------------------
def record_outcome(receipt: DurableWritebackReceipt, outcome: Outcome) -> Journalled:
    """Journal one evaluation; safe inside an outer ``transaction.atomic()``.

    Insert first, under a savepoint: the unique ``dispatch_id`` decides. When the row
    already exists (a replay, a retry, or a racing dispatcher — PostgreSQL makes the racing
    insert wait for the other transaction), the row is locked and merged.
    """
    now = clock.now()
    try:
        with transaction.atomic():
            _insert(receipt, outcome, now)
        _observed(receipt, outcome, now)
        return _j(outcome, "recorded", outcome.failure_code)
    except IntegrityError:
        existing = HookDispatch.objects.select_for_update().get(dispatch_id=outcome.dispatch_id)
    return _merge(existing, outcome, now)


def _observed(receipt: DurableWritebackReceipt, outcome: Outcome, now) -> None:
    """Count one journalled dispatch and its lag behind the writeback receipt."""
    metrics.dispatch_observed(
        status=outcome.status,
        failure_code=outcome.failure_code,
        lag_seconds=(now - receipt.created_at).total_seconds(),
    )


def _j(outcome: Outcome, name: str, code: str | None) -> Journalled:
    return Journalled(outcome.dispatch_id, outcome.hook.hook_id, name, code, outcome.invoked)


def _dispatch_row(receipt: DurableWritebackReceipt, outcome: Outcome, now) -> HookDispatch:
    hook = outcome.hook
    settlement = receipt.settlement
    max_attempts = (
        hook.registration["budget"]["max_invocations_per_dispatch"] if hook.registration else 1
    )
    return HookDispatch(
        dispatch_id=outcome.dispatch_id,
        receipt=receipt,
        goal=settlement.goal,
        agent=settlement.agent,
        hook_id=hook.hook_id,
        capability_id=hook.capability_id,
        event_kind=receipt.event_kind,
        registration_schema_version=contracts.REGISTRATION_SCHEMA,
        registration_digest=hook.registration_digest,
        status=outcome.status,
        failure_code=outcome.failure_code,
        failure_reason=outcome.failure_reason,
        result=outcome.result,
        result_digest=outcome.result_digest,
        intent_count=len(outcome.result["intents"]) if outcome.result else 0,
        attempts=0 if outcome.failure_reason == dispatcher.POOL_EXHAUSTED else 1,
        max_attempts=max_attempts,
        created_at=now,
        updated_at=now,
    )


def _intent_rows(dispatch: HookDispatch, outcome: Outcome, now) -> list[HookIntent]:
    if not outcome.result:
        return []
    return [
        HookIntent(
            intent_id=packet["intent_id"],
            dispatch=dispatch,
            goal_id=dispatch.goal_id,
            agent_id=dispatch.agent_id,
            position=position,
            hook_id=packet["hook_id"],
            capability_id=packet["capability_id"],
            intent_kind=packet["intent_kind"],
            operation=packet["operation"],
            policy_version=packet["policy_version"],
            payload=packet["payload"],
            budget=packet["budget"],
            requested_write_scope=packet["requested_write_scope"],
            created_at=now,
            updated_at=now,
        )
        for position, packet in enumerate(outcome.result["intents"])
    ]


def _insert(receipt: DurableWritebackReceipt, outcome: Outcome, now) -> HookDispatch:
    dispatch = _dispatch_row(receipt, outcome, now)
    dispatch.save(force_insert=True)
    _insert_intents(dispatch, outcome, now)
    return dispatch


def _insert_intents(dispatch: HookDispatch, outcome: Outcome, now) -> None:
    rows = _intent_rows(dispatch, outcome, now)
    if rows:
        HookIntent.objects.bulk_create(rows)


def _insert_batch(
    receipt: DurableWritebackReceipt, outcomes: list[Outcome], registry_digest: str, ids
) -> list[tuple[HookDispatch, list[str]]]:
    """Fresh receipt: journal every outcome and the checkpoint in one savepoint; the
    ``(dispatch, intent_ids)`` rows written, in ``hook_id`` order.

    Raises ``IntegrityError`` (savepoint rolled back) when any row already exists; the
    caller then falls back to the per-dispatch journal."""
    now = clock.now()
    with transaction.atomic():
        dispatches = [_dispatch_row(receipt, o, now) for o in outcomes]
        HookDispatch.objects.bulk_create(dispatches)
        pairs = zip(dispatches, outcomes, strict=True)
        intents = [row for d, o in pairs for row in _intent_rows(d, o, now)]
        if intents:
            HookIntent.objects.bulk_create(intents)
        HookPhaseCheckpoint.objects.create(
            receipt=receipt, registry_digest=registry_digest, dispatch_ids=ids, completed_at=now
        )
    for outcome in outcomes:  # counted like the per-dispatch journal counts its rows
        _observed(receipt, outcome, now)
    by_dispatch: dict[str, list[str]] = {d.dispatch_id: [] for d in dispatches}
    for intent in intents:
        by_dispatch[intent.dispatch.dispatch_id].append(intent.intent_id)
    ordered = sorted(dispatches, key=lambda d: (d.hook_id, d.pk))
    return [(d, by_dispatch[d.dispatch_id]) for d in ordered]


def _merge(existing: HookDispatch, outcome: Outcome, now) -> Journalled:
    if existing.status in SUCCESS:
        if outcome.result is None or outcome.result_digest == existing.result_digest:
            return _j(outcome, "replayed", None)
        HookDispatch.objects.filter(pk=existing.pk).update(
            conflict_count=F("conflict_count") + 1,
            conflict_code=codes.INTENT_CONFLICT,
            last_conflict_digest=outcome.result_digest,
            updated_at=now,
        )
        logger.info("intent_conflict on %s; original kept", existing.dispatch_id)
        return _j(outcome, "conflict", codes.INTENT_CONFLICT)
    # existing failed: the same identity is retried, never duplicated.
    not_run = outcome.failure_reason == dispatcher.POOL_EXHAUSTED
    changes = {"attempts": F("attempts") + (0 if not_run else 1), "updated_at": now}
    if outcome.status in SUCCESS:
        changes.update(
            status=outcome.status,
            failure_code=None,
            failure_reason="",
            result=outcome.result,
            result_digest=outcome.result_digest,
            intent_count=len(outcome.result["intents"]),
        )
        HookDispatch.objects.filter(pk=existing.pk).update(**changes)
        existing.refresh_from_db()
        _insert_intents(existing, outcome, now)
        return _j(outcome, "retried", None)
    changes.update(failure_code=outcome.failure_code, failure_reason=outcome.failure_reason)
    HookDispatch.objects.filter(pk=existing.pk).update(**changes)
    return _j(outcome, "failed_again", outcome.failure_code)


# -- the phase ------------------------------------------------------------------------------
def run_hook_phase(
    receipt: DurableWritebackReceipt, *, retry_failed: bool = True, fresh: bool = False
) -> PhaseResult:
    """Dispatch the admitted hooks of one committed receipt; never raises.

    Must run after the primary transaction committed. Existing successful dispatches are
    returned without invoking their provider; failed ones are retried under their
    ``max_attempts`` when ``retry_failed``. ``fresh`` (the caller has just committed the
    receipt) skips looking up earlier dispatches; the unique constraint still decides.
    """
    try:
        return _run(receipt, retry_failed=retry_failed, fresh=fresh)
    except DatabaseError as exc:
        logger.warning("hook phase deferred for %s: %s", receipt.receipt_id, type(exc).__name__)
        return PhaseResult(status="deferred", reason="sidecar_unavailable")
    except Exception as exc:  # the hook phase never fails the primary
        logger.error("hook phase deferred for %s: %s", receipt.receipt_id, type(exc).__name__)
        return PhaseResult(status="deferred", reason="sidecar_error")


def _run(receipt: DurableWritebackReceipt, *, retry_failed: bool, fresh: bool) -> PhaseResult:
    settlement = receipt.settlement
    if not settlement.post_writeback_hooks_enabled:
        return PhaseResult(status="disabled", reason="phase_disabled")
    reason = dispatcher.inadmissible_reason(receipt)
    if reason:
        return PhaseResult(status="not_admissible", reason=reason)
    reg = registry.installed()
    hooks = reg.admitted(allowlist=settlement.hook_allowlist, event_kind=receipt.event_kind)
    over_budget = dispatcher.plan_budgets(hooks)
    existing = {}
    if hooks and not fresh:
        existing = {d.dispatch_id: d for d in HookDispatch.objects.filter(receipt=receipt)}

    evaluated: list[Outcome] = []
    settled: list[Journalled] = []
    for hook in hooks:
        dispatch_id = dispatcher.dispatch_id_for(receipt, hook)
        row = existing.get(dispatch_id)
        retryable = (
            row is not None
            and row.status == HookDispatch.Status.FAILED
            and retry_failed
            and row.attempts < row.max_attempts
        )
        if row is not None and not retryable:
            settled.append(Journalled(dispatch_id, hook.hook_id, "replayed", None, False))
            continue
        evaluated.append(
            dispatcher.evaluate(receipt, hook, budget_reason=over_budget.get(hook.hook_id))
        )

    ids = [dispatcher.dispatch_id_for(receipt, h) for h in hooks]
    if fresh and evaluated and not settled:
        try:
            written = _insert_batch(receipt, evaluated, reg.digest, ids)
        except IntegrityError:  # a racing dispatcher got there first: journal one by one
            pass
        else:
            outcomes = [_j(o, "recorded", o.failure_code) for o in evaluated]
            return PhaseResult(status="dispatched", outcomes=outcomes, dispatches=written)

    journalled: list[Journalled] = []
    with transaction.atomic():
        for outcome in evaluated:
            journalled.append(record_outcome(receipt, outcome))
        _checkpoint(receipt, reg.digest, ids)
    order = {dispatch_id: i for i, dispatch_id in enumerate(ids)}
    outcomes = sorted(settled + journalled, key=lambda j: order[j.dispatch_id])
    return PhaseResult(status="dispatched", outcomes=outcomes)


def _checkpoint(receipt: DurableWritebackReceipt, registry_digest: str, ids: list[str]) -> None:
    # a concurrent phase that checkpointed first stands
    insert_once(
        HookPhaseCheckpoint,
        receipt=receipt,
        registry_digest=registry_digest,
        dispatch_ids=ids,
        completed_at=clock.now(),
    )
