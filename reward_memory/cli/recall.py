"""``reward_memory recall``."""

from loopx_site.core import access
from loopx_site.core.cli import (
    add_agent_arguments,
    add_execute_argument,
    format_mapping,
    format_table,
)
from reward_memory import services
from reward_memory.documents import recall as documents
from reward_memory.domain.inputs import read_json
from reward_memory.errors import AREA

NAME = "recall"
HELP = "Guarded recall for one corpus and surface."


def arguments(parser):
    parser.add_argument("--input", required=True, help="reward_memory_recall_request_v0 JSON.")
    add_agent_arguments(
        parser,
        required=False,
        goal_help="The Agent's Goal (LoopX request packets).",
        agent_help="The Agent (LoopX request packets).",
    )
    add_execute_argument(parser)


def run(command, *, input, execute=False, goal_id=None, agent_id=None, **_):
    viewer = None
    if goal_id is not None or agent_id is not None:
        # the operator's shell, through the same resolver as the API
        acting = access.SHELL.acting_for(goal_id, agent_id, area=AREA)
        goal_id, agent_id, viewer = acting.goal_id, acting.agent_id, acting.viewer
    recalled = services.recall(
        request=read_json(input), execute=execute, goal_id=goal_id, agent_id=agent_id,
        viewer=viewer,
    )  # fmt: skip
    return documents.recall_result(recalled)


def render(payload):
    head = format_mapping(payload, skip=("items", "public_packet", "guard"))
    rows = [
        {"class": i["memory_class"], "confidence": i["confidence"], "summary": i["summary"]}
        for i in payload.get("items", [])
    ]
    reasons = ", ".join(r["code"] for r in payload["guard"]["reasons"]) or "-"
    table = format_table(rows, ["class", "confidence", "summary"])
    return f"{head}\nguard: {reasons}\n{table}"
