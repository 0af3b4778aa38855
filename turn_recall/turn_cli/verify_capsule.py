"""``turn verify-capsule``."""

from loopx_site.core.cli import format_mapping
from turn_recall.cli import acting, add_scope

NAME = "verify-capsule"
HELP = (
    "Verify a signed Turn capsule for one Goal/Agent: valid, or invalid with a "
    "reason (malformed, tampered, expired, scope_mismatch). Read-only; the key "
    "never appears."
)


def arguments(parser):
    add_scope(parser, turn=False)
    parser.add_argument(
        "--capsule-file", required=True, help="The turn_capsule JSON (a file, or - for stdin)."
    )


def run(command, *, goal_id, agent_id, capsule_file, **_):
    from loopx_site.core import files
    from turn_recall import capsule
    from turn_recall import contracts as c

    signed = files.read_json(capsule_file, option="capsule_file", area=c.AREA)
    scope = acting(goal_id, agent_id)
    return capsule.verification(signed, goal_id=scope.goal_id, agent_id=scope.agent_id)


def render(payload) -> str:
    return format_mapping({k: payload[k] for k in ("status", "reason", "expires_at")})
