"""``turn settle``."""

from hooks.models import EVENT_KINDS
from hooks.registry import PROFILE_NAMES
from loopx_site.core.cli import format_mapping, format_table
from turn_recall.cli import add_scope

NAME = "settle"
HELP = (
    "Settle one Todo event of a Turn (preview unless --execute). Replaying the same "
    "settlement returns the same receipt and dispatches."
)

#: ``turn settle``'s options that are ``settle_turn``'s settlement arguments as they are.
SETTLE_OPTIONS = (
    "goal_id", "agent_id", "todo_id", "turn_instance_id", "event_kind", "execute", "profile",
)  # fmt: skip


def arguments(parser):
    add_scope(parser)
    parser.add_argument("--todo-id", required=True)
    parser.add_argument("--event-kind", required=True, choices=EVENT_KINDS)
    parser.add_argument(
        "--profile",
        choices=PROFILE_NAMES,
        help="Execution profile (default: 'default', hooks enabled).",
    )
    parser.add_argument("--execute", action="store_true", help="Commit (default: preview).")
    # Reward Memory post-settlement reflection (reward_memory owns the rule)
    parser.add_argument(
        "--reward-memory-reflection-json",
        help="turn_reward_memory_reflection_v0 JSON file; checked before anything is "
        "written. The Todo's declared validator runs on the server.",
    )
    parser.add_argument(
        "--reward-memory-validation-json",
        help="Ignored (reported as caller_validation_ignored): the server runs the "
        "Todo's declared completion validator itself.",
    )


def run(
    command, *, reward_memory_reflection_json=None, reward_memory_validation_json=None, **options
):
    from reward_memory.domain.inputs import read_json
    from turn_recall import settlement

    reflection = reward_memory_reflection_json
    result = settlement.settle_turn(
        **{name: options[name] for name in SETTLE_OPTIONS},
        reflection=(
            read_json(reflection, option="reward-memory-reflection-json") if reflection else None
        ),
        caller_validation_supplied=bool(reward_memory_validation_json),
    )
    return result.payload


def render(payload) -> str:
    receipt = payload["receipt"]
    head = format_mapping(
        {
            "status": payload["status"],
            "execute": payload["execute"],
            "receipt_id": receipt["receipt_id"],
            "receipt_state": receipt["state"],
            "state_revision": receipt["state_revision"],
            "committed_at": receipt.get("committed_at"),
            "quota_spent": (payload.get("quota_spend") or {}).get("spent", False),
            "hook_phase": payload["hook_phase"]["status"],
        }
    )
    phase = payload["hook_phase"]
    rows = phase["dispatches"] or phase.get("planned", [])
    table = format_table(rows, ["hook_id", "dispatch_id", "status", "failure_code"])
    return head + "\n\n" + table
