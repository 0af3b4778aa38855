"""``replay``: recover the hook phase of committed receipts (crash recovery).

A process killed after the primary commit and before the sidecar checkpoint leaves a
committed receipt with no hook checkpoint. Replaying it runs the same admitted hooks
against the same receipt, so it produces the same ``dispatch_id`` and ``intent_id``
values; the journal's unique constraints make a second replay a no-op.

A replay answers with the original identities and the present: each receipt's
``dispatches`` are the journal rows as they are now and ``intent_states`` the outbox
state of its intents now (an intent executed or rejected since says so); a replay never
writes a second dispatch, intent or checkpoint.

``replay`` returns a ``ReplayOutcome`` (one ``ReplayItem`` per receipt, with the rows read
after its phase); the adapters render it with ``hooks.documents.replay_outcome``.
"""

from dataclasses import dataclass

from hooks import dispatcher, registry, selectors
from hooks.errors import AREA, HookError, error
from hooks.models import DurableWritebackReceipt, HookDispatch
from hooks.services.phase import PhaseResult, run_hook_phase
from loopx_site.core import access, progress
from loopx_site.core.validation import require_identifier

MAX_REPLAY = 500


@dataclass(frozen=True)
class ReplayItem:
    """One receipt replayed (``phase`` and ``dispatches`` set) or planned (``admissible``
    and ``planned_dispatch_ids`` set)."""

    receipt: DurableWritebackReceipt
    reason: str  # requested | missing_checkpoint | retryable_failure
    intent_states: list[dict]
    phase: PhaseResult | None = None
    dispatches: list[tuple[HookDispatch, list[str]]] | None = None
    admissible: bool | None = None
    planned_dispatch_ids: list[str] | None = None


@dataclass(frozen=True)
class ReplayOutcome:
    execute: bool
    items: list[ReplayItem]


def replay(
    *,
    goal_id: str | None = None,
    receipt_id: str | None = None,
    execute: bool = False,
    retry_failed: bool = True,
    limit: int = 100,
    operator: access.Caller = access.SHELL,
) -> ReplayOutcome:
    """Preview (default) or run the hook phase for receipts that need it. Run by the
    operator's shell, or by an account holding ``hooks.change_hookdispatch`` (the admin)."""
    if execute:
        access.require_operator_permission(operator, "hooks.change_hookdispatch", error=HookError)
    if goal_id is not None:
        require_identifier(goal_id, "goal_id", area=AREA)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_REPLAY:
        raise error("invalid_argument", f"limit must be 1-{MAX_REPLAY}", field="limit")
    candidates: list[tuple[object, str]] = []
    if receipt_id is not None:
        require_identifier(receipt_id, "receipt_id", area=AREA)
        candidates.append((selectors.get_receipt(receipt_id), "requested"))
    else:
        missing = selectors.receipts_missing_hook_checkpoint()
        if goal_id is not None:
            missing = missing.filter(settlement__goal__goal_id=goal_id)
        candidates += [(r, "missing_checkpoint") for r in missing[:limit]]
        if retry_failed and len(candidates) < limit:
            seen = {r.pk for r, _ in candidates}
            failing = selectors.receipts_with_retryable_failures()
            if goal_id is not None:
                failing = failing.filter(settlement__goal__goal_id=goal_id)
            for receipt in failing[: limit - len(candidates)]:
                if receipt.pk not in seen:
                    candidates.append((receipt, "retryable_failure"))
    reg = registry.installed()
    items = []
    for receipt, reason in progress.track(candidates, desc="hook replay", unit="receipt"):
        if execute:
            phase = run_hook_phase(receipt, retry_failed=retry_failed)
            dispatches = selectors.receipt_dispatches(receipt)
            item = ReplayItem(receipt, reason, selectors.intent_states(receipt), phase, dispatches)
        else:
            settlement = receipt.settlement
            hooks = reg.admitted(allowlist=settlement.hook_allowlist, event_kind=receipt.event_kind)
            item = ReplayItem(
                receipt,
                reason,
                selectors.intent_states(receipt),
                admissible=dispatcher.inadmissible_reason(receipt) is None,
                planned_dispatch_ids=[dispatcher.dispatch_id_for(receipt, h) for h in hooks],
            )
        items.append(item)
    return ReplayOutcome(execute, items)
