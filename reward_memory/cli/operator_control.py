"""``reward_memory operator-control``."""

from loopx_site.core.cli import add_execute_argument, call_with_options
from reward_memory import principals, services
from reward_memory.cli.common import operator_actor
from reward_memory.documents import operator_control as control_documents
from reward_memory.domain import validation
from reward_memory.domain.inputs import read_json

NAME = "operator-control"
HELP = (
    "Prepare an authorised edit or retire decision for an active record; --execute "
    "stores it (for dogfood) and performs a retire at once, as the admin does."
)


def arguments(parser):
    parser.add_argument("--input", required=True, help="The record (JSON with record_ref).")
    parser.add_argument("--action", required=True, choices=["edit", "retire"])
    parser.add_argument("--control-ref", required=True, help="The operator checkpoint id.")
    parser.add_argument("--reasoning-summary", required=True)
    parser.add_argument("--edited-content-summary")
    operator_actor(parser)
    add_execute_argument(
        parser, "Store the decision; a retire also retires the record (one operation)."
    )


def run(command, *, input, actor, **options):
    principal = principals.operator_account(actor, field="actor", code="operator_required")
    record_ref = validation.ref(read_json(input).get("record_ref"), "record_ref")
    decision = call_with_options(
        services.operator_control, options, record_ref=record_ref, principal=principal
    )
    return control_documents.decision(decision)
