"""What the journal listings (``hooks dispatches``, ``hooks intents``) share."""

from hooks.errors import AREA
from loopx_site.core import access
from loopx_site.core.cli import call_with_options


def listing_arguments(parser) -> None:
    """``--goal-id``, ``--limit`` and ``--after-cursor`` (the API's ``goal_id``, ``limit``
    and ``cursor``)."""
    parser.add_argument("--goal-id")
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--after-cursor", type=int, dest="cursor")


def journal(select, options):
    """A journal listing from the operator's shell (``access``: the one scope rule)."""
    goal_ids, agent_id = access.SHELL.listing_scope(options["goal_id"], area=AREA)
    return call_with_options(select, options, goal_ids=goal_ids, agent_id=agent_id)
