"""The primary settlement seam: ``settle`` a Turn's Todo event.

Primary writeback, in ONE transaction: Todo state change (row-locked), the
``TurnSettlement``, the committed ``DurableWritebackReceipt`` with its checkpoint digest,
and the ``QuotaSpend`` that the receipt makes eligible. After that transaction has
committed — outside it — the hook phase runs (``phase.run_hook_phase``); its outcome is
reported next to the primary receipt but can never change it.

Replaying the same settlement (same Agent + ``turn_instance_id`` and the same Todo,
event and profile) returns the same receipt and the same dispatches, and recovers any
missing dispatch; the same Turn instance with different identities is
``settlement_conflict``.

``settle`` returns a ``SettleResult``: the rows it wrote or found (or, for a first
preview, what it would write); the adapters render it with
``hooks.documents.settle_result``.
"""

from dataclasses import dataclass, field

from django.db import IntegrityError, transaction

from hooks import contracts, dispatcher, registry, selectors
from hooks.errors import AREA, error
from hooks.faults import fault_point
from hooks.models import (
    EVENT_KINDS,
    DurableWritebackReceipt,
    HookDispatch,
    QuotaSpend,
    Todo,
    TurnSettlement,
)
from hooks.services.phase import PhaseResult, run_hook_phase
from loopx_site.core import clock
from loopx_site.core import selectors as core_selectors
from loopx_site.core.models import Agent
from loopx_site.core.validation import require_identifier

RECOVERY_SWEEP_LIMIT = 4


@dataclass(frozen=True)
class SettlePreview:
    """What a first settlement would write: nothing is stored yet."""

    agent: Agent
    todo: Todo
    profile: registry.Profile
    effect_id: str
    receipt_id: str
    event_kind: str
    turn_instance_id: str
    planned: list[dict]


@dataclass(frozen=True)
class SettleResult:
    """A settlement as written or found (``preview`` set only for a first preview)."""

    status: str  # preview | committed | replayed
    execute: bool
    settlement: TurnSettlement | None = None
    receipt: DurableWritebackReceipt | None = None
    spend: QuotaSpend | None = None
    eligibility: dict | None = None
    #: the hook phase that ran here (``None``: it did not, a preview of a replay)
    phase: PhaseResult | None = None
    #: ``(dispatch, intent_ids)`` rows of the receipt, in ``hook_id`` order
    dispatches: list[tuple[HookDispatch, list[str]]] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    preview: SettlePreview | None = None


def _validate(goal_id, agent_id, todo_id, turn_instance_id, event_kind, profile_name):
    for value, name in (
        (goal_id, "goal_id"),
        (agent_id, "agent_id"),
        (todo_id, "todo_id"),
        (turn_instance_id, "turn_instance_id"),
    ):
        require_identifier(value, name, area=AREA)
    if event_kind not in EVENT_KINDS:
        raise error(
            "invalid_argument",
            f"event_kind must be one of {', '.join(EVENT_KINDS)}",
            field="event_kind",
        )
    if profile_name is not None and profile_name not in registry.PROFILE_NAMES:
        raise error(
            "invalid_argument",
            f"profile must be one of {', '.join(registry.PROFILE_NAMES)}",
            field="profile",
        )


def settle(
    *,
    goal_id: str,
    agent_id: str,
    turn_instance_id: str,
    todo_id: str,
    event_kind: str,
    profile: str | None = None,
    execute: bool = False,
) -> SettleResult:
    """Settle one Turn event; preview unless ``execute``. See the module docstring."""
    _validate(goal_id, agent_id, todo_id, turn_instance_id, event_kind, profile)
    agent = core_selectors.get_agent(goal_id, agent_id, area=AREA)
    todo = selectors.get_todo(goal_id, todo_id)
    chosen = registry.profile(profile)
    effect = contracts.effect_id(
        goal_id=goal_id,
        agent_id=agent_id,
        todo_id=todo_id,
        turn_instance_id=turn_instance_id,
        event_kind=event_kind,
    )
    existing = selectors.find_settlement(agent=agent, turn_instance_id=turn_instance_id)
    if existing is not None:
        _require_same(existing, effect, chosen, explicit_profile=profile is not None)
    if not execute:
        if existing is not None:
            return _replayed(existing, execute=False)
        return _preview(agent, todo, effect, event_kind, turn_instance_id, chosen)
    if existing is not None:
        return _replayed(existing, execute=True)

    try:
        settlement, receipt = _commit_primary(
            agent=agent,
            todo=todo,
            effect=effect,
            event_kind=event_kind,
            turn_instance_id=turn_instance_id,
            chosen=chosen,
        )
    except IntegrityError:
        # A racing settle of the same Turn instance committed first.
        existing = selectors.find_settlement(agent=agent, turn_instance_id=turn_instance_id)
        if existing is None:
            raise
        _require_same(existing, effect, chosen, explicit_profile=profile is not None)
        return _replayed(existing, execute=True)
    if settlement is None:  # found committed by a racer once the Todo lock was held
        existing = selectors.find_settlement(agent=agent, turn_instance_id=turn_instance_id)
        _require_same(existing, effect, chosen, explicit_profile=profile is not None)
        return _replayed(existing, execute=True)

    fault_point("after_primary_commit")
    phase = run_hook_phase(receipt, fresh=True)
    recovered = recover_pending(agent=agent, exclude=receipt)
    return _result("committed", True, settlement, receipt, phase, recovered)


def _require_same(existing: TurnSettlement, effect: str, chosen, *, explicit_profile: bool):
    if existing.effect_id != effect or (explicit_profile and existing.profile != chosen.name):
        raise error(
            "settlement_conflict",
            "This Turn instance was already settled with a different Todo, event or profile",
            field="turn_instance_id",
        )


def _commit_primary(*, agent, todo, effect, event_kind, turn_instance_id, chosen):
    """The primary durable writeback. Returns ``(None, None)`` when a racer won."""
    now = clock.now()
    with transaction.atomic():
        locked = Todo.objects.select_for_update().select_related("goal").get(pk=todo.pk)
        if TurnSettlement.objects.filter(agent=agent, turn_instance_id=turn_instance_id).exists():
            return None, None
        if locked.state != Todo.State.OPEN:
            raise error(
                "todo_not_open",
                f"Todo {locked.todo_id!r} is already completed; nothing was written",
                field="todo_id",
            )
        revision = locked.revision + 1
        changes = {"revision": revision, "updated_at": now}
        if event_kind == "todo_completed":
            changes.update(state=Todo.State.COMPLETED, completed_at=now)
        else:
            changes["replan_count"] = locked.replan_count + 1
        updated = Todo.objects.filter(pk=locked.pk, revision=locked.revision).update(**changes)
        if updated != 1:  # defensive: the row lock makes this unreachable
            raise error("settlement_conflict", "The Todo changed concurrently", field="todo_id")
        facts = _event_facts(locked, event_kind, revision)
        settlement = TurnSettlement.objects.create(
            goal=locked.goal,
            agent=agent,
            todo=locked,
            turn_instance_id=turn_instance_id,
            event_kind=event_kind,
            effect_id=effect,
            profile=chosen.name,
            post_writeback_hooks_enabled=chosen.post_writeback_hooks_enabled,
            hook_allowlist=chosen.hook_allowlist,
            created_at=now,
        )
        receipt = DurableWritebackReceipt(
            receipt_id=contracts.receipt_id(effect_id=effect),
            settlement=settlement,
            effect_id=effect,
            event_kind=event_kind,
            state=DurableWritebackReceipt.State.COMMITTED,
            state_revision=f"r{revision}",
            event_facts=facts,
            committed_at=now,
            created_at=now,
        )
        receipt.checkpoint_digest = dispatcher.checkpoint_digest(receipt)
        receipt.save(force_insert=True)
        QuotaSpend.objects.create(
            spend_id=contracts.spend_id(receipt_id=receipt.receipt_id),
            receipt=receipt,
            goal=locked.goal,
            agent=agent,
            units=1,
            spent_at=now,
        )
    return settlement, receipt


def _event_facts(todo: Todo, event_kind: str, revision: int) -> dict:
    """Bounded facts snapshotted with the receipt, so replays project identically."""
    segment = None
    completed_segment = False
    if todo.segment_ref:
        segment = selectors.segment_progress(todo.goal.goal_id, todo.segment_ref)
        completed_segment = segment["todos_completed"] == segment["todos_total"]
    if event_kind == "replan_recorded":
        transition = "replan_recorded"
    elif completed_segment:
        transition = "segment_completed"
    else:
        transition = "todo_completed"
    return {"transition": transition, "todo_revision": revision, "segment": segment}


def _replayed(settlement: TurnSettlement, *, execute: bool) -> SettleResult:
    receipt = selectors.receipt_for(settlement)
    phase = run_hook_phase(receipt) if execute else None
    return _result("replayed", execute, settlement, receipt, phase, [])


def _preview(agent, todo, effect, event_kind, turn_instance_id, chosen) -> SettleResult:
    if todo.state != Todo.State.OPEN:
        raise error(
            "todo_not_open",
            f"Todo {todo.todo_id!r} is already completed; nothing would be written",
            field="todo_id",
        )
    receipt_id = contracts.receipt_id(effect_id=effect)
    planned = []
    if chosen.post_writeback_hooks_enabled:
        hooks = registry.installed().admitted(
            allowlist=chosen.hook_allowlist, event_kind=event_kind
        )
        planned = [
            {
                "hook_id": h.hook_id,
                "dispatch_id": contracts.dispatch_id(
                    receipt_id=receipt_id,
                    hook_id=h.hook_id,
                    registration_schema_version=contracts.REGISTRATION_SCHEMA,
                    event_kind=event_kind,
                    registration_digest=h.registration_digest,
                ),
                "registration_valid": h.valid,
            }
            for h in hooks
        ]
    preview = SettlePreview(
        agent, todo, chosen, effect, receipt_id, event_kind, turn_instance_id, planned
    )
    return SettleResult("preview", False, preview=preview)


def _result(status, execute, settlement, receipt, phase: PhaseResult | None, recovered):
    known = phase.dispatches if phase is not None else None
    return SettleResult(
        status,
        execute,
        settlement=settlement,
        receipt=receipt,
        spend=selectors.quota_spend_for(receipt),
        eligibility=selectors.quota_spend_eligibility(receipt),
        phase=phase,
        dispatches=known if known is not None else selectors.receipt_dispatches(receipt),
        recovered=recovered,
    )


def recover_pending(*, agent, exclude: DurableWritebackReceipt | None = None) -> list[str]:
    """At the next settle: finish the hook phase of this Agent's receipts that a crash left
    without a sidecar checkpoint (bounded)."""
    qs = selectors.receipts_missing_hook_checkpoint().filter(settlement__agent=agent)
    if exclude is not None:
        qs = qs.exclude(pk=exclude.pk)
    recovered = []
    for receipt in qs[:RECOVERY_SWEEP_LIMIT]:
        if run_hook_phase(receipt).status == "dispatched":
            recovered.append(receipt.receipt_id)
    return recovered
