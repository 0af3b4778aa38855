"""Demo data of the hooks app (idempotent): the shipped ``loopx-evidence-check`` completion
validator, two Todos of Goal ``demo`` declaring it, one committed ``todo_completed`` and
one ``replan_recorded`` settlement, their dispatches and intents, and one intent decided
by the ``fake-scheduler`` executor (the other stays pending so the admin's admit/reject
actions have something to act on).

Validator and Todos are created only when missing: one an operator changed (another
manifest, a disabled validator, a Todo without a validator) is kept as it is."""

from pathlib import Path

from hooks import services
from hooks.models import CompletionValidator, Todo
from hooks.services import validators

VALIDATOR_ID = "loopx-evidence-check"
VALIDATOR_MANIFEST = Path(__file__).resolve().parent / "extensions" / "evidence_check.json"


def install_demo_validator() -> str:
    """Install the shipped validator if no validator has its id (``installed`` / ``kept``)."""
    if CompletionValidator.objects.filter(validator_id=VALIDATOR_ID).exists():
        return "kept"
    manifest = validators.read_manifest_file(VALIDATOR_MANIFEST)
    services.install_validator(manifest, installed_by="loopx_demo", execute=True)
    return "installed"


def add_demo_todo(*, todo_id: str, title: str, segment_ref: str) -> str:
    """Add a demo Todo declaring the demo validator unless it exists (``created`` /
    ``kept``)."""
    if Todo.objects.filter(goal__goal_id="demo", todo_id=todo_id).exists():
        return "kept"
    active = CompletionValidator.objects.filter(validator_id=VALIDATOR_ID, active=True).exists()
    services.add_todo(
        goal_id="demo",
        todo_id=todo_id,
        title=title,
        segment_ref=segment_ref,
        validator=VALIDATOR_ID if active else None,
        execute=True,
    )
    return "created"


def load(*, log) -> dict:
    log(f"completion validator {VALIDATOR_ID}: {install_demo_validator()}")
    add_demo_todo(
        todo_id="demo-write-tests", title="Write the settlement tests", segment_ref="demo-segment-1"
    )
    add_demo_todo(todo_id="demo-ship-docs", title="Ship the API docs", segment_ref="demo-segment-2")
    done = services.settle(
        goal_id="demo",
        agent_id="author",
        todo_id="demo-write-tests",
        turn_instance_id="demo-turn-1",
        event_kind="todo_completed",
        execute=True,
    )
    replan = services.settle(
        goal_id="demo",
        agent_id="author",
        todo_id="demo-ship-docs",
        turn_instance_id="demo-turn-2",
        event_kind="replan_recorded",
        execute=True,
    )
    first = [i for d in done.payload["hook_phase"]["dispatches"] for i in d["intent_ids"]]
    if first:
        services.execute_intents(executor="fake-scheduler", execute=True, intent_ids=first)
    dispatches = (
        done.payload["hook_phase"]["dispatches"] + replan.payload["hook_phase"]["dispatches"]
    )
    log(
        f"settled 2 Turns of Goal demo ({done.status}, {replan.status}); "
        f"{len(dispatches)} hook dispatch(es)"
    )
    return {
        "validator": VALIDATOR_ID,
        "todos": ["demo-write-tests", "demo-ship-docs"],
        "receipts": [r.payload["receipt"]["receipt_id"] for r in (done, replan)],
        "dispatches": [d["dispatch_id"] for d in dispatches],
        "intents": [i for d in dispatches for i in d["intent_ids"]],
    }
