"""Demo data: one executed turn of Goal ``demo`` / Agent ``author``. Its host packet
carries the author's explicit preferences and the Reward Memory turn-admission guidance.

Create-only (``loopx_site.core.demo_kit``): once the demo turn's recall receipt exists it
is kept — the turn is not run again."""

from loopx_site.core.canonical import digest_ref
from loopx_site.core.demo_kit import Ledger
from turn_recall import services
from turn_recall.models import TurnRecallReceipt

TURN = "demo-turn-recall-1"


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
    packet = ledger.ensure(
        f"turn demo/author/{TURN}",
        exists=lambda: _receipt() is not None,
        create=lambda: services.run_once(
            goal_id="demo", agent_id="author", turn_instance_id=TURN, execute=True
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
    return ledger.document(turn_recall_id=turn_recall_id, status=status, guidance=guidance)
