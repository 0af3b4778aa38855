"""Reads of the settlement seam and the hook sidecar, and their one output shape each.

The Todo/settlement reads here are the ones a quota packet builder needs
(``list_todos``, ``recent_settlements``, ``quota_spend_eligibility``): they depend on
primary records only, never on the hook sidecar.
"""

from django.db.models import Exists, F, OuterRef, Q, QuerySet

from hooks import contracts, dispatcher, registry
from hooks.errors import error
from hooks.models import (
    DurableWritebackReceipt,
    HookDispatch,
    HookIntent,
    QuotaSpend,
    Todo,
    TurnSettlement,
)
from loopx_site.core import clock
from loopx_site.core.validation import require_identifier

AREA = "post_writeback_hook"
MAX_LIMIT = 500

RECEIPT_SCHEMA = "loopx_durable_writeback_receipt_v0"
QUOTA_SPEND_SCHEMA = "loopx_quota_spend_v0"
TODO_SCHEMA = "loopx_todo_v0"


# -- Todos ----------------------------------------------------------------------------------
def get_todo(goal_id: str, todo_id: str) -> Todo:
    require_identifier(goal_id, "goal_id", area=AREA)
    require_identifier(todo_id, "todo_id", area=AREA)
    todo = Todo.objects.select_related("goal", "validator").filter(
        goal__goal_id=goal_id, todo_id=todo_id
    )
    found = todo.first()
    if found is None:
        raise error(
            "todo_not_found", f"Todo {todo_id!r} is not in Goal {goal_id!r}", field="todo_id"
        )
    return found


def list_todos(goal_id: str, *, state: str | None = None) -> QuerySet[Todo]:
    qs = Todo.objects.select_related("goal", "validator").filter(goal__goal_id=goal_id)
    if state:
        qs = qs.filter(state=state)
    return qs.order_by("created_at", "todo_id")


def todo_payload(todo: Todo) -> dict:
    return {
        "todo_id": todo.todo_id,
        "goal_id": todo.goal.goal_id,
        "title": todo.title,
        "state": todo.state,
        "segment_ref": todo.segment_ref or None,
        "validator": todo.validator.validator_id if todo.validator_id else None,
        "revision": todo.revision,
        "replan_count": todo.replan_count,
        "created_at": clock.iso(todo.created_at),
        "updated_at": clock.iso(todo.updated_at),
        "completed_at": clock.iso(todo.completed_at),
    }


def todo_add_payload(result, *, execute: bool) -> dict:
    """The one output of ``todo add`` (CLI and API)."""
    return {
        "schema_version": TODO_SCHEMA,
        "status": result.status,
        "execute": execute,
        "created": result.created,
        "todo": todo_payload(result.todo),
    }


def segment_progress(goal_id: str, segment_ref: str) -> dict:
    """Bounded public counts of one segment of a Goal's Todos."""
    qs = Todo.objects.filter(goal__goal_id=goal_id, segment_ref=segment_ref)
    return {
        "segment_ref": segment_ref,
        "todos_total": qs.count(),
        "todos_completed": qs.filter(state=Todo.State.COMPLETED).count(),
    }


# -- settlements and receipts --------------------------------------------------------------
def _receipts() -> QuerySet[DurableWritebackReceipt]:
    return DurableWritebackReceipt.objects.select_related(
        "settlement__goal", "settlement__agent", "settlement__todo"
    )


def find_settlement(*, agent, turn_instance_id: str) -> TurnSettlement | None:
    return (
        TurnSettlement.objects.select_related("goal", "agent", "todo")
        .filter(agent=agent, turn_instance_id=turn_instance_id)
        .first()
    )


def receipt_for(settlement: TurnSettlement) -> DurableWritebackReceipt | None:
    return _receipts().filter(settlement=settlement, effect_id=settlement.effect_id).first()


def get_receipt(receipt_id: str) -> DurableWritebackReceipt:
    found = _receipts().filter(receipt_id=receipt_id).first()
    if found is None:
        raise error("receipt_not_found", "No such durable-writeback receipt", field="receipt_id")
    return found


def recent_settlements(goal_id: str, agent_id: str, *, limit: int = 10) -> list[dict]:
    """The Agent's latest committed settlements, newest first (compact, public-safe)."""
    receipts = (
        _receipts()
        .filter(
            settlement__goal__goal_id=goal_id,
            settlement__agent__agent_id=agent_id,
            state=DurableWritebackReceipt.State.COMMITTED,
        )
        .order_by("-committed_at", "-id")[: max(1, min(limit, MAX_LIMIT))]
    )
    return [receipt_payload(r) for r in receipts]


def receipt_payload(receipt: DurableWritebackReceipt) -> dict:
    return {
        "schema_version": RECEIPT_SCHEMA,
        **dispatcher.receipt_core(receipt),
        "checkpoint_digest": receipt.checkpoint_digest or None,
    }


def quota_spend_eligibility(receipt: DurableWritebackReceipt) -> dict:
    """Eligibility of the matching quota spend: a function of the primary receipt only."""
    committed = receipt.state == DurableWritebackReceipt.State.COMMITTED
    matches = receipt.effect_id == receipt.settlement.effect_id
    return {
        "eligible": committed and matches,
        "basis": "primary_durable_writeback_receipt",
        "receipt_id": receipt.receipt_id,
        "effect_id": receipt.effect_id,
        "receipt_state": receipt.state,
    }


def quota_spend_payload(receipt: DurableWritebackReceipt, spend: QuotaSpend | None) -> dict:
    settlement = receipt.settlement
    return {
        "schema_version": QUOTA_SPEND_SCHEMA,
        "spend_id": spend.spend_id if spend else contracts.spend_id(receipt_id=receipt.receipt_id),
        "goal_id": settlement.goal.goal_id,
        "agent_id": settlement.agent.agent_id,
        "units": spend.units if spend else 1,
        "spent": spend is not None,
        "spent_at": clock.iso(spend.spent_at) if spend else None,
        "eligibility": quota_spend_eligibility(receipt),
    }


def quota_spend_for(receipt: DurableWritebackReceipt) -> QuotaSpend | None:
    return QuotaSpend.objects.filter(receipt=receipt).first()


# -- dispatches and intents -----------------------------------------------------------------
def dispatch_payload(dispatch: HookDispatch, intent_ids: list[str] | None = None) -> dict:
    if intent_ids is None:
        intent_ids = [i.intent_id for i in dispatch.intents.order_by("position")]
    return {
        "schema_version": contracts.DISPATCH_RECEIPT_SCHEMA,
        "dispatch_id": dispatch.dispatch_id,
        "hook_id": dispatch.hook_id,
        "capability_id": dispatch.capability_id or None,
        "receipt_id": dispatch.receipt.receipt_id,
        "goal_id": dispatch.goal.goal_id,
        "agent_id": dispatch.agent.agent_id,
        "event_kind": dispatch.event_kind,
        "registration_schema_version": dispatch.registration_schema_version,
        "registration_digest": dispatch.registration_digest or None,
        "status": dispatch.status,
        "failure_code": dispatch.failure_code,
        "failure_reason": dispatch.failure_reason or None,
        "result_digest": dispatch.result_digest or None,
        "intent_ids": intent_ids,
        "attempts": dispatch.attempts,
        "max_attempts": dispatch.max_attempts,
        "conflict_count": dispatch.conflict_count,
        "conflict_code": dispatch.conflict_code,
        "recorded_at": clock.iso(dispatch.created_at),
    }


def intent_payload(intent: HookIntent) -> dict:
    """The validated ``loopx_post_writeback_intent_v0`` packet plus its outbox state."""
    return {
        "schema_version": contracts.INTENT_SCHEMA,
        "intent_id": intent.intent_id,
        "hook_id": intent.hook_id,
        "capability_id": intent.capability_id,
        "source_dispatch_id": intent.dispatch.dispatch_id,
        "intent_kind": intent.intent_kind,
        "operation": intent.operation,
        "policy_version": intent.policy_version,
        "payload": intent.payload,
        "budget": intent.budget,
        "requested_write_scope": intent.requested_write_scope,
        "failure_policy": contracts.FAILURE_POLICY,
        "grants_new_action_authority": False,
        "external_write_performed": False,
        "outbox": {
            "status": intent.status,
            "status_reason": intent.status_reason or None,
            "goal_id": intent.goal.goal_id,
            "agent_id": intent.agent.agent_id,
            "created_at": clock.iso(intent.created_at),
            "updated_at": clock.iso(intent.updated_at),
        },
    }


def dispatch_payloads(receipt: DurableWritebackReceipt) -> list[dict]:
    """The dispatch receipts of one primary receipt, in ``hook_id`` order."""
    dispatches = list(HookDispatch.objects.filter(receipt=receipt).order_by("hook_id", "pk"))
    intents: dict[int, list[str]] = {d.pk: [] for d in dispatches}
    if any(d.intent_count for d in dispatches):
        rows = HookIntent.objects.filter(dispatch__receipt=receipt).order_by("position")
        for dispatch_pk, intent_id in rows.values_list("dispatch_id", "intent_id"):
            intents[dispatch_pk].append(intent_id)
    settlement = receipt.settlement
    for d in dispatches:  # known already: no joins needed
        d.receipt, d.goal, d.agent = receipt, settlement.goal, settlement.agent
    return [dispatch_payload(d, intents[d.pk]) for d in dispatches]


def intent_states(receipt: DurableWritebackReceipt) -> list[dict]:
    """The present outbox state of one primary receipt's intents (``intent_id``,
    ``status``), in dispatch (``hook_id``) then position order — read now, never the
    state a dispatch recorded."""
    rows = (
        HookIntent.objects.filter(dispatch__receipt=receipt)
        .order_by("dispatch__hook_id", "dispatch__pk", "position")
        .values_list("intent_id", "status")
    )
    return [{"intent_id": intent_id, "status": status} for intent_id, status in rows]


def _pos(intent: HookIntent) -> int:
    return intent.position


def _scope(qs, goal_ids: list[str] | None, agent_id: str | None):
    if goal_ids is not None:
        qs = qs.filter(goal__goal_id__in=goal_ids)
    if agent_id is not None:
        qs = qs.filter(agent__agent_id=agent_id)
    return qs


def _page(qs, *, after: int | None, limit: int):
    limit = max(1, min(int(limit), MAX_LIMIT))
    if after is not None:
        qs = qs.filter(pk__lt=after)
    rows = list(qs.order_by("-pk")[: limit + 1])
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, (rows[-1].pk if more and rows else None)


def failure_code_q(code: str) -> Q:
    """Dispatches that recorded ``code``: a failure, or a kept original's conflict."""
    return Q(failure_code=code) | Q(conflict_code=code)


def list_dispatches(
    *,
    goal_ids: list[str] | None = None,
    agent_id: str | None = None,
    status: str | None = None,
    failure_code: str | None = None,
    receipt_id: str | None = None,
    hook_id: str | None = None,
    after: int | None = None,
    limit: int = 100,
) -> dict:
    """Newest first, cursor-paginated (``next_cursor`` is an opaque integer)."""
    qs = HookDispatch.objects.select_related("receipt", "goal", "agent").prefetch_related("intents")
    qs = _scope(qs, goal_ids, agent_id)
    if status:
        qs = qs.filter(status=status)
    if failure_code:
        qs = qs.filter(failure_code_q(failure_code))
    if receipt_id:
        qs = qs.filter(receipt__receipt_id=receipt_id)
    if hook_id:
        qs = qs.filter(hook_id=hook_id)
    rows, cursor = _page(qs, after=after, limit=limit)
    return {
        "schema_version": "loopx_post_writeback_dispatch_list_v0",
        "dispatches": [
            dispatch_payload(d, [i.intent_id for i in sorted(d.intents.all(), key=_pos)])
            for d in rows
        ],
        "next_cursor": cursor,
    }


def list_intents(
    *,
    goal_ids: list[str] | None = None,
    agent_id: str | None = None,
    status: str | None = None,
    intent_kind: str | None = None,
    dispatch_id: str | None = None,
    after: int | None = None,
    limit: int = 100,
) -> dict:
    qs = HookIntent.objects.select_related("dispatch", "goal", "agent")
    qs = _scope(qs, goal_ids, agent_id)
    if status:
        qs = qs.filter(status=status)
    if intent_kind:
        qs = qs.filter(intent_kind=intent_kind)
    if dispatch_id:
        qs = qs.filter(dispatch__dispatch_id=dispatch_id)
    rows, cursor = _page(qs, after=after, limit=limit)
    return {
        "schema_version": "loopx_post_writeback_intent_list_v0",
        "intents": [intent_payload(i) for i in rows],
        "next_cursor": cursor,
    }


def registrations_payload() -> dict:
    reg = registry.installed()
    profile = registry.profile(None)
    return {
        "schema_version": "loopx_post_writeback_registration_list_v0",
        "registry_digest": reg.digest,
        "profile": profile.public(),
        "registrations": [
            {
                **h.public(),
                "admitted_by_profile": h.valid
                and h.hook_id is not None
                and profile.post_writeback_hooks_enabled
                and (profile.hook_allowlist is None or h.hook_id in profile.hook_allowlist),
            }
            for h in reg.hooks
        ],
    }


def receipts_missing_hook_checkpoint() -> QuerySet[DurableWritebackReceipt]:
    """Committed receipts whose enabled hook phase never checkpointed (crash recovery)."""
    return (
        _receipts()
        .filter(
            state=DurableWritebackReceipt.State.COMMITTED,
            settlement__post_writeback_hooks_enabled=True,
            hook_checkpoint__isnull=True,
        )
        .order_by("committed_at", "id")
    )


def receipts_with_retryable_failures() -> QuerySet[DurableWritebackReceipt]:
    """Committed receipts with a failed dispatch that still has attempts left."""
    retryable = HookDispatch.objects.filter(
        receipt=OuterRef("pk"),
        status=HookDispatch.Status.FAILED,
        attempts__lt=F("max_attempts"),
    )
    return (
        _receipts()
        .filter(state=DurableWritebackReceipt.State.COMMITTED)
        .filter(Exists(retryable))
        .order_by("committed_at", "id")
    )
