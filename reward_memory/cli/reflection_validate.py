"""``reward_memory reflection-validate``."""

from loopx_site.core.cli import add_execute_argument, call_with_options
from reward_memory import principals, services
from reward_memory.cli.common import operator_actor
from reward_memory.documents import reflection as reflection_documents

NAME = "reflection-validate"
HELP = (
    "Record a reflection candidate's validation by hand (passed | failed), attributed "
    "to the --actor operator account; a pass on a settled Turn finalises it."
)


def arguments(parser):
    parser.add_argument("--goal-id", required=True)
    parser.add_argument("--agent-id", required=True)
    parser.add_argument("--reflection-digest", required=True)
    parser.add_argument("--status", required=True, choices=["passed", "failed"])
    parser.add_argument("--evidence-ref", help="Opaque ref of what the operator checked.")
    operator_actor(parser)
    add_execute_argument(parser)


def run(command, *, actor, **options):
    principal = principals.operator_account(actor, field="actor", code="operator_required")
    outcome = call_with_options(services.record_validation, options, principal=principal)
    return reflection_documents.outcome(outcome)
