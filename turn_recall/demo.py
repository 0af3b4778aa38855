"""Demo data: one executed turn of Goal ``demo`` / Agent ``author``. Its host packet
carries the author's explicit preferences and the Reward Memory turn-admission guidance.

Before it, one Todo-bound settlement with a post-settlement reflection: the Todo declares
the shipped ``loopx-evidence-check`` validator, which the server runs at settlement and
whose passing document finalises the reflection.

Create-only (``loopx_site.core.demo_kit``): once the demo turn's recall receipt (or the
reflection's settlement) exists it is kept — the turn is not run (settled) again."""

from loopx_site.core.canonical import digest_ref
from loopx_site.core.demo_kit import Ledger
from turn_recall import documents, services, settlement
from turn_recall.models import TurnRecallReceipt

TURN = "demo-turn-recall-1"
REFLECTION_TODO = "demo-review-pr-notes"
REFLECTION_TURN = "demo-turn-reflect-1"


def _settle_with_reflection(ledger: Ledger, log) -> dict:
    from hooks import demo as hooks_demo
    from hooks.models import TurnSettlement
    from reward_memory.models import ReflectionCandidate

    # (the hooks loader, which runs first, installed the validator)
    hooks_demo.ensure_demo_todo(
        ledger, todo_id=REFLECTION_TODO, title="Review the PR notes", segment_ref="demo-segment-3"
    )
    ledger.ensure(
        f"settlement demo/author/{REFLECTION_TURN}",
        exists=TurnSettlement.objects.filter(
            agent__goal__goal_id="demo", agent__agent_id="author", turn_instance_id=REFLECTION_TURN
        ).exists,
        create=lambda: settlement.settle_turn(
            goal_id="demo",
            agent_id="author",
            todo_id=REFLECTION_TODO,
            turn_instance_id=REFLECTION_TURN,
            event_kind="todo_completed",
            execute=True,
            reflection=documents.demo_reflection(),
        ),
    )
    row = ReflectionCandidate.objects.filter(
        goal__goal_id="demo", agent__agent_id="author", turn_instance_id=REFLECTION_TURN
    ).first()
    validation = (row.validation or {}).get("status") if row is not None else None
    reflection = row.status if row is not None else None
    log(
        f"settled {REFLECTION_TODO} with a reflection: validator {validation or 'not run'}, "
        f"reflection {reflection}"
    )
    return {"reflection": reflection, "validation": validation}


def _receipt():
    return (
        TurnRecallReceipt.objects.filter(
            goal_id="demo", agent_id="author", turn_instance_digest=digest_ref(TURN)
        )
        .order_by("created_at", "pk")
        .first()
    )


def load(*, log) -> dict:
    ledger = Ledger()
    reflected = _settle_with_reflection(ledger, log)
    packet = ledger.ensure(
        f"turn demo/author/{TURN}",
        exists=lambda: _receipt() is not None,
        create=lambda: documents.host_packet(
            services.run_once(
                goal_id="demo", agent_id="author", turn_instance_id=TURN, execute=True
            )
        ),
    )
    if packet is not None:
        recall = packet["agent_turn_recall"]
        guidance = len((recall.get("context") or {}).get("guidance") or [])
        hooks = packet["quota_decision"].get("turn_start_hooks") or {}
        contexts = len(hooks.get("contexts") or [])
        turn_recall_id, status = recall["turn_recall_id"], recall["status"]
    else:
        receipt = _receipt()
        turn_recall_id, status, guidance, contexts = (
            receipt.turn_recall_id, "kept", receipt.guidance_count, None
        )  # fmt: skip
    log(
        f"turn recall: demo/author {status} with {guidance} guidance item(s)"
        + ("" if contexts is None else f", {contexts} preference context(s)")
    )
    return ledger.document(
        turn_recall_id=turn_recall_id, status=status, guidance=guidance, reflection=reflected
    )
