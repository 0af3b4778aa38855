"""Demo data: one executed turn of Goal ``demo`` / Agent ``author`` (idempotent: the
turn's recall receipt replays on a second run). Its host packet carries the author's
explicit preferences and the Reward Memory turn-admission guidance.

Before it, one Todo-bound settlement with a post-settlement reflection: the Todo declares
the shipped ``loopx-evidence-check`` validator, which the server runs at settlement and
whose passing document finalises the reflection (a rerun replays it: same receipt, no
second validator run)."""

from turn_recall import services, settlement

TURN = "demo-turn-recall-1"
REFLECTION_TODO = "demo-review-pr-notes"
REFLECTION_TURN = "demo-turn-reflect-1"


def _reflection() -> dict:
    return {
        "schema_version": "turn_reward_memory_reflection_v0",
        "surface_id": "issue_fix.pr_description",
        "source_types": ["real", "engineering"],
        "evidence_refs": ["validation:demo-turn-reflect-1/tests", "pr:loopx-demo#3"],
        "event": {
            "schema_version": "scoped_feedback_reward_memory_event_v0",
            "event_id": "reflection-0001",
            "target_class": "soft_preference",
            "source": {
                "kind": "maintainer_feedback",
                "actor": "user:demo-maintainer",
                "actor_role": "maintainer",
                "evidence_ref": "feedback:loopx-demo/pr-description/0003",
                "observed_at": "2025-06-03T10:00:00Z",
            },
            "scope": {
                "workspace": "loopx",
                "project": "loopx-demo",
                "surface": "issue_fix.pr_description",
            },
            "content_summary": "Name the validation command and its result in the PR body.",
            "reasoning_summary": "The settled turn's reviewer asked where the test run was.",
            "confidence": {"level": "medium", "basis": "one maintainer comment, one turn"},
            "requested_action_scopes": [],
            "conflicts": [],
        },
    }


def _settle_with_reflection(log) -> dict:
    from hooks import demo as hooks_demo

    hooks_demo.install_demo_validator()
    hooks_demo.add_demo_todo(
        todo_id=REFLECTION_TODO, title="Review the PR notes", segment_ref="demo-segment-3"
    )
    result = settlement.settle_turn(
        goal_id="demo",
        agent_id="author",
        todo_id=REFLECTION_TODO,
        turn_instance_id=REFLECTION_TURN,
        event_kind="todo_completed",
        execute=True,
        reflection=_reflection(),
    )
    refl = result.payload["reward_memory_reflection"]
    validation = refl.get("validation") or {}
    log(
        f"settled {REFLECTION_TODO} with a reflection ({result.status}): validator "
        f"{validation.get('status', 'not run')}, reflection {refl['status']}"
    )
    return {
        "settlement": result.status,
        "reflection": refl["status"],
        "validation": validation.get("status"),
    }


def load(*, log) -> dict:
    reflected = _settle_with_reflection(log)
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
        "reflection": reflected,
    }
