"""Demo data: one executed turn of Goal ``demo`` / Agent ``author`` (idempotent: the
turn's recall receipt replays on a second run). Its host packet carries the author's
explicit preferences and the Reward Memory turn-admission guidance."""

from turn_recall import services

TURN = "demo-turn-recall-1"


def load(*, log) -> dict:
    packet = services.run_once(
        goal_id="demo", agent_id="author", turn_instance_id=TURN, execute=True
    )
    recall = packet["agent_turn_recall"]
    guidance = (recall.get("context") or {}).get("guidance") or []
    hooks = packet["quota_decision"].get("turn_start_hooks") or {}
    log(
        f"turn recall: demo/author {recall['status']} with {len(guidance)} guidance item(s), "
        f"{len(hooks.get('contexts') or [])} preference context(s)"
    )
    return {
        "turn_recall_id": recall["turn_recall_id"],
        "status": recall["status"],
        "guidance": len(guidance),
    }
