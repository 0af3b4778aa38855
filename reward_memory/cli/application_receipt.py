"""``reward_memory application-receipt``."""

from loopx_site.core.cli import add_execute_argument
from reward_memory import services
from reward_memory.documents import recall as documents
from reward_memory.domain.inputs import read_json

NAME = "application-receipt"
HELP = "Record how a recall's memory was applied."


def arguments(parser):
    parser.add_argument("--input", required=True, help="reward_memory_application_v0.")
    add_execute_argument(parser)


def run(command, *, input, execute=False, **_):
    applied = services.record_application(document=read_json(input), execute=execute)
    return documents.application(applied)
