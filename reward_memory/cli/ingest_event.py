"""``reward_memory ingest-event``."""

from loopx_site.core import access
from loopx_site.core.cli import add_agent_arguments, add_execute_argument
from reward_memory import principals, services
from reward_memory.documents import ingest as documents
from reward_memory.domain.inputs import read_json
from reward_memory.errors import AREA

NAME = "ingest-event"
HELP = "Ingest one compact event (planned by default)."


def arguments(parser):
    add_agent_arguments(parser, required=False)
    parser.add_argument("--input", required=True, help="Compact event JSON file (or -).")
    add_execute_argument(parser)
    parser.add_argument(
        "--actor",
        help="Operator account (user:<name>) submitting the event: binds itself as the "
        "source role operator; without it only checkpoints bind the source actor.",
    )


def run(command, *, input, goal_id=None, agent_id=None, execute=False, actor=None, **_):
    principal = principals.operator_account(actor, field="actor") if actor else None
    if goal_id and agent_id:  # the operator's shell, through the same resolver as the API
        acting = access.SHELL.acting_for(goal_id, agent_id, area=AREA)
        goal_id, agent_id = acting.goal_id, acting.agent_id
    ingested = services.submit_event(
        document=read_json(input), goal_id=goal_id, agent_id=agent_id, execute=execute,
        principal=principal,
    )  # fmt: skip
    return documents.ingest(ingested)
