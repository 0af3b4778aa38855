"""``reward_memory route-check``."""

from reward_memory import routing
from reward_memory.documents import route_check as documents

NAME = "route-check"
HELP = "Route an issue-fix observation to pilot, meta or evidence hold."


def arguments(parser):
    parser.add_argument("--case", choices=sorted(routing.CASES), help="A shipped case.")
    parser.add_argument(
        "--behavior-status", choices=list(routing.BEHAVIOR_STATUSES), default="bug_confirmed"
    )
    parser.add_argument("--surface-count", type=int, default=1)
    parser.add_argument("--edge-case-complexity", choices=list(routing.COMPLEXITIES), default="low")
    for flag in routing.FLAGS:
        parser.add_argument(f"--{flag.replace('_', '-')}", action="store_true")


def run(command, *, case=None, **options):
    if case is not None:
        return documents.route(routing.route(routing.CASES[case]))
    observation = {
        "behavior_status": options.get("behavior_status"),
        "surface_count": options.get("surface_count"),
        "edge_case_complexity": options.get("edge_case_complexity"),
        **{flag: bool(options.get(flag)) for flag in routing.FLAGS},
    }
    return documents.route(routing.route(observation))
