from hooks.errors import AREA
from hooks.models import EVENT_KINDS
from hooks.registry import PROFILE_NAMES
from loopx_site.core import files
from loopx_site.core.cli import LoopxCommand, format_mapping, format_table
from reward_memory.domain.inputs import read_json
from turn_recall import capsule, documents, services, settlement
from turn_recall import contracts as c
from turn_recall.cli import acting, add_scope

#: ``turn settle``'s options that are ``settle_turn``'s settlement arguments as they are.
SETTLE_OPTIONS = (
    "goal_id", "agent_id", "todo_id", "turn_instance_id", "event_kind", "execute", "profile",
)  # fmt: skip


class Command(LoopxCommand):
    help = "Settle a Turn: primary durable writeback, then the post-writeback hook phase."
    error_area = AREA

    def add_command_arguments(self, parser):
        sub = self.add_subcommands(parser)
        settle = sub.add(
            "settle",
            "Settle one Todo event of a Turn (preview unless --execute). Replaying the same "
            "settlement returns the same receipt and dispatches.",
        )
        add_scope(settle)
        settle.add_argument("--todo-id", required=True)
        settle.add_argument("--event-kind", required=True, choices=EVENT_KINDS)
        settle.add_argument(
            "--profile",
            choices=PROFILE_NAMES,
            help="Execution profile (default: 'default', hooks enabled).",
        )
        settle.add_argument("--execute", action="store_true", help="Commit (default: preview).")
        # Reward Memory post-settlement reflection (reward_memory owns the rule)
        settle.add_argument(
            "--reward-memory-reflection-json",
            help="turn_reward_memory_reflection_v0 JSON file; checked before anything is "
            "written. The Todo's declared validator runs on the server.",
        )
        settle.add_argument(
            "--reward-memory-validation-json",
            help="Ignored (reported as caller_validation_ignored): the server runs the "
            "Todo's declared completion validator itself.",
        )
        once = sub.add(
            "run-once",
            "Compose quota should-run and agent turn recall into the host packet for one "
            "turn (recall previews unless --execute).",
        )
        add_scope(once, execute="Recall (default: preview).")
        verify = sub.add(
            "verify-capsule",
            "Verify a signed Turn capsule for one Goal/Agent: valid, or invalid with a "
            "reason (malformed, tampered, expired, scope_mismatch). Read-only; the key "
            "never appears.",
        )
        add_scope(verify, turn=False)
        verify.add_argument(
            "--capsule-file", required=True, help="The turn_capsule JSON (a file, or - for stdin)."
        )

    def run_settle(
        self, *, reward_memory_reflection_json=None, reward_memory_validation_json=None, **options
    ):
        reflection = reward_memory_reflection_json
        result = settlement.settle_turn(
            **{name: options[name] for name in SETTLE_OPTIONS},
            reflection=(
                read_json(reflection, option="reward-memory-reflection-json")
                if reflection
                else None
            ),
            caller_validation_supplied=bool(reward_memory_validation_json),
        )
        return result.payload

    def run_run_once(self, *, goal_id, agent_id, turn_instance_id, execute, **_):
        return documents.host_packet(
            services.run_once(
                goal_id=goal_id,
                agent_id=agent_id,
                turn_instance_id=turn_instance_id,
                execute=execute,
            )
        )

    def run_verify_capsule(self, *, goal_id, agent_id, capsule_file, **_):
        signed = files.read_json(capsule_file, option="capsule_file", area=c.AREA)
        scope = acting(goal_id, agent_id)
        return capsule.verification(signed, goal_id=scope.goal_id, agent_id=scope.agent_id)

    def render_text(self, payload, *, subcommand=None):
        if subcommand == "verify-capsule":
            return format_mapping({k: payload[k] for k in ("status", "reason", "expires_at")})
        if subcommand == "run-once":
            task = payload.get("task") or {}
            head = format_mapping(
                {
                    "status": payload["status"],
                    "recall": payload["agent_turn_recall"]["status"],
                    "todo": task.get("todo_id"),
                }
            )
            return head + ("\n\n" + task["body"] if task.get("body") else "")
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
