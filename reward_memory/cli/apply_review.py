"""``reward_memory apply-review``."""

from loopx_site.core.cli import add_execute_argument
from reward_memory import principals, services
from reward_memory.documents import review as review_documents

NAME = "apply-review"
HELP = "Perform an accepted/retire review's next step with the corpus owner's authority."


def arguments(parser):
    parser.add_argument("--review-id", required=True)
    parser.add_argument("--actor", required=True, help="The operator account acting (user:<name>).")
    add_execute_argument(parser)


def run(command, *, review_id, actor, execute=False, **_):
    principal = principals.operator_account(actor, field="actor", code="owner_not_authorized")
    step = services.apply_review(review_id=review_id, principal=principal, execute=execute)
    return review_documents.review_step(step)
