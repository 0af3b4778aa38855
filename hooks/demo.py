"""Demo data of the hooks app: the shipped ``loopx-evidence-check`` completion validator,
two Todos of Goal ``demo`` declaring it, one committed ``todo_completed`` and one
``replan_recorded`` settlement, their dispatches and intents, and one intent decided by
the ``fake-scheduler`` executor (the other stays pending so the admin's admit/reject
actions have something to act on).

Create-only (``loopx_site.core.demo_kit``): a validator, Todo or settlement that exists
is kept — never reinstalled, re-declared, settled, executed or decided again — so an
operator's disabled validator or admit/reject stays."""

from pathlib import Path

from hooks import selectors, services
from hooks.models import CompletionValidator, DurableWritebackReceipt, Todo, TurnSettlement
from hooks.services import validators
from loopx_site.core.demo_kit import Ledger

VALIDATOR_ID = "loopx-evidence-check"
VALIDATOR_MANIFEST = Path(__file__).resolve().parent / "extensions" / "evidence_check.json"

TODOS = [
    ("demo-write-tests", "Write the settlement tests", "demo-segment-1"),
    ("demo-ship-docs", "Ship the API docs", "demo-segment-2"),
]
TURNS = [
    ("demo-write-tests", "demo-turn-1", "todo_completed"),
    ("demo-ship-docs", "demo-turn-2", "replan_recorded"),
]


def _settlement(turn_instance_id: str):
    return TurnSettlement.objects.filter(
        agent__goal__goal_id="demo", agent__agent_id="author", turn_instance_id=turn_instance_id
    )


def ensure_demo_validator(ledger: Ledger) -> None:
    """Install the shipped validator unless a validator has its id."""
    ledger.ensure(
        f"completion validator {VALIDATOR_ID}",
        exists=CompletionValidator.objects.filter(validator_id=VALIDATOR_ID).exists,
        create=lambda: services.install_validator(
            validators.read_manifest_file(VALIDATOR_MANIFEST),
            installed_by="loopx_demo",
            execute=True,
        ),
    )


def ensure_demo_todo(ledger: Ledger, *, todo_id: str, title: str, segment_ref: str) -> None:
    """Add a demo Todo declaring the demo validator (while it is enabled) unless the Todo
    exists."""

    def create():
        active = CompletionValidator.objects.filter(validator_id=VALIDATOR_ID, active=True)
        return services.add_todo(
            goal_id="demo",
            todo_id=todo_id,
            title=title,
            segment_ref=segment_ref,
            validator=VALIDATOR_ID if active.exists() else None,
            execute=True,
        )

    ledger.ensure(
        f"todo demo/{todo_id}",
        exists=Todo.objects.filter(goal__goal_id="demo", todo_id=todo_id).exists,
        create=create,
    )


def load(*, log) -> dict:
    ledger = Ledger()
    ensure_demo_validator(ledger)
    for todo_id, title, segment in TODOS:
        ensure_demo_todo(ledger, todo_id=todo_id, title=title, segment_ref=segment)
    for todo_id, turn, event_kind in TURNS:
        settled = ledger.ensure(
            f"settlement demo/author/{turn}",
            exists=_settlement(turn).exists,
            create=lambda todo_id=todo_id, turn=turn, event_kind=event_kind: services.settle(
                goal_id="demo",
                agent_id="author",
                todo_id=todo_id,
                turn_instance_id=turn,
                event_kind=event_kind,
                execute=True,
            ),
        )
        if settled is not None and event_kind == "todo_completed":
            # the first settlement's intents are decided once, when it is created
            intents = [i for _, intent_ids in settled.dispatches for i in intent_ids]
            if intents:
                services.execute_intents(
                    executor="fake-scheduler", execute=True, intent_ids=intents
                )
    receipts = [
        DurableWritebackReceipt.objects.filter(settlement__in=_settlement(turn))
        .order_by("created_at", "pk")
        .first()
        for _, turn, _ in TURNS
    ]
    dispatches = [d for r in receipts if r is not None for d in selectors.receipt_dispatches(r)]
    log(f"settled 2 Turns of Goal demo ({ledger.summary()}); {len(dispatches)} hook dispatch(es)")
    return ledger.document(
        validator=VALIDATOR_ID,
        todos=[todo_id for todo_id, _, _ in TODOS],
        receipts=[r.receipt_id for r in receipts if r is not None],
        dispatches=[d.dispatch_id for d, _ in dispatches],
        intents=[i for _, intent_ids in dispatches for i in intent_ids],
    )
