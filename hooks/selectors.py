"""Reads of the settlement seam and the hook sidecar. They return rows and plain data;
``hooks.documents`` renders them.

The Todo/settlement reads here are the ones a quota packet builder needs
(``list_todos``, ``recent_settlements``, ``quota_spend_eligibility``): they depend on
primary records only, never on the hook sidecar.
"""

from dataclasses import dataclass

from django.db.models import Exists, F, OuterRef, Q, QuerySet

from hooks import documents, registry
from hooks.errors import error
from hooks.models import (
    DurableWritebackReceipt,
    HookDispatch,
    HookIntent,
    QuotaSpend,
    Todo,
    TurnSettlement,
)
from loopx_site.core import selectors as core_selectors
from loopx_site.core.validation import require_identifier

AREA = "post_writeback_hook"
MAX_LIMIT = 500


@dataclass(frozen=True)
class Page:
    """One page of a newest-first listing; ``next_cursor`` is an opaque integer."""

    rows: list
    next_cursor: int | None


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
    """A registered Goal's Todos, oldest first (``goal_not_registered`` otherwise);
    ``state`` (``open`` | ``completed``) filters — the CLI and the API alike."""
    core_selectors.get_goal(goal_id, area=AREA)
    if state is not None and state not in Todo.State.values:
        raise error(
            "invalid_argument",
            f"`state` must be one of {', '.join(Todo.State.values)}",
            field="state",
        )
    qs = Todo.objects.select_related("goal", "validator").filter(goal__goal_id=goal_id)
    if state:
        qs = qs.filter(state=state)
    return qs.order_by("created_at", "todo_id")


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
    """The Agent's latest committed settlements, newest first, as their public receipts
    (``hooks.documents.receipt``: the quota packet's interface)."""
    receipts = (
        _receipts()
        .filter(
            settlement__goal__goal_id=goal_id,
            settlement__agent__agent_id=agent_id,
            state=DurableWritebackReceipt.State.COMMITTED,
        )
        .order_by("-committed_at", "-id")[: max(1, min(limit, MAX_LIMIT))]
    )
    return [documents.receipt(r) for r in receipts]


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


def quota_spend_for(receipt: DurableWritebackReceipt) -> QuotaSpend | None:
    return QuotaSpend.objects.filter(receipt=receipt).first()


# -- dispatches and intents -----------------------------------------------------------------
def receipt_dispatches(receipt: DurableWritebackReceipt) -> list[tuple[HookDispatch, list[str]]]:
    """The journalled dispatches of one primary receipt with their intent ids, in
    ``hook_id`` order (render with ``documents.dispatches``)."""
    dispatches = list(HookDispatch.objects.filter(receipt=receipt).order_by("hook_id", "pk"))
    intents: dict[int, list[str]] = {d.pk: [] for d in dispatches}
    if any(d.intent_count for d in dispatches):
        rows = HookIntent.objects.filter(dispatch__receipt=receipt).order_by("position")
        for dispatch_pk, intent_id in rows.values_list("dispatch_id", "intent_id"):
            intents[dispatch_pk].append(intent_id)
    settlement = receipt.settlement
    for d in dispatches:  # known already: no joins needed
        d.receipt, d.goal, d.agent = receipt, settlement.goal, settlement.agent
    return [(d, intents[d.pk]) for d in dispatches]


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


def _page(qs, *, cursor: int | None, limit: int) -> Page:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise error("invalid_argument", f"`limit` must be 1-{MAX_LIMIT}", field="limit")
    if cursor is not None:
        qs = qs.filter(pk__lt=cursor)
    rows = list(qs.order_by("-pk")[: limit + 1])
    more = len(rows) > limit
    rows = rows[:limit]
    return Page(rows, rows[-1].pk if more and rows else None)


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
    cursor: int | None = None,
    limit: int = 100,
) -> Page:
    """Newest first, cursor-paginated: a ``Page`` of ``(dispatch, intent_ids)`` pairs."""
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
    page = _page(qs, cursor=cursor, limit=limit)
    pairs = [(d, [i.intent_id for i in sorted(d.intents.all(), key=_pos)]) for d in page.rows]
    return Page(pairs, page.next_cursor)


def list_intents(
    *,
    goal_ids: list[str] | None = None,
    agent_id: str | None = None,
    status: str | None = None,
    intent_kind: str | None = None,
    dispatch_id: str | None = None,
    cursor: int | None = None,
    limit: int = 100,
) -> Page:
    """Newest first, cursor-paginated: a ``Page`` of outbox intents."""
    qs = HookIntent.objects.select_related("dispatch", "goal", "agent")
    qs = _scope(qs, goal_ids, agent_id)
    if status:
        qs = qs.filter(status=status)
    if intent_kind:
        qs = qs.filter(intent_kind=intent_kind)
    if dispatch_id:
        qs = qs.filter(dispatch__dispatch_id=dispatch_id)
    return _page(qs, cursor=cursor, limit=limit)


@dataclass(frozen=True)
class Registrations:
    """The installed registrations, each with whether the default profile admits it."""

    registry_digest: str
    profile: registry.Profile
    hooks: list[tuple[registry.InstalledHook, bool]]
    #: installation paths are operator information
    show_provider: bool


def registrations(*, operator: bool) -> Registrations:
    reg = registry.installed()
    profile = registry.profile(None)
    admitted = [
        (
            h,
            h.valid
            and h.hook_id is not None
            and profile.post_writeback_hooks_enabled
            and (profile.hook_allowlist is None or h.hook_id in profile.hook_allowlist),
        )
        for h in reg.hooks
    ]
    return Registrations(reg.digest, profile, admitted, show_provider=operator)


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
