"""``reward_memory candidate-review``."""

from loopx_site.core.cli import add_execute_argument
from reward_memory import contracts, principals, services
from reward_memory.documents import review as review_documents
from reward_memory.domain.inputs import CASES, read_case, read_case_review, read_json

NAME = "candidate-review"
HELP = "Review one candidate: accept|edit|reject|retire|no_write."
DEFAULT_CASE = "issue-fix-verified-contributor"


def arguments(parser):
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--input", help="Candidate (or adapter input / review wrapper) JSON.")
    source.add_argument(
        "--case",
        choices=sorted(CASES),
        help=f"A shipped public fixture (default: {DEFAULT_CASE}).",
    )
    parser.add_argument("--decision", default="accept", choices=contracts.DECISIONS)
    parser.add_argument(
        "--reviewer", help="The operator account recording the review (user:<name>)."
    )
    parser.add_argument("--corpus-id")
    parser.add_argument("--record-ref", help="The active record a retire decision closes.")
    parser.add_argument(
        "--distinct",
        action="store_true",
        help="The candidate is distinct from the record it is marked duplicate_of: "
        "accepting it activates a record of its own instead of adding its evidence.",
    )
    add_execute_argument(parser, "Record the review.")


def run(
    command,
    *,
    input=None,
    case=None,
    decision,
    reviewer=None,
    corpus_id=None,
    record_ref=None,
    execute=False,
    distinct=False,
    **_,
):
    if input is None and case is None:
        case = DEFAULT_CASE
    document = read_case(case) if case else read_json(input)
    fixture = read_case_review(decision) if case else None
    edit = fixture["edit"] if (fixture and decision == "edit") else None
    # a shipped case's preview shows LoopX's fixture review (labels, no authority)
    preview_review = fixture["review"] if (fixture and not execute and not reviewer) else None
    if "candidate" in document and "schema_version" not in document:
        edit = document.get("edit")
        reviewer = reviewer or document.get("reviewer")
        corpus_id = corpus_id or document.get("corpus_id")
        record_ref = record_ref or document.get("record_ref")
        distinct = distinct or document.get("distinct") is True
        document = document["candidate"]
    principal = None
    if reviewer is not None or execute:
        principal = principals.operator_account(
            reviewer, field="reviewer", code="reviewer_not_authorized"
        )
    result = services.review_candidate(
        candidate=document, decision=decision, principal=principal, corpus_id=corpus_id,
        edit=edit, record_ref=record_ref, execute=execute, preview_review=preview_review,
        distinct=distinct,
    )  # fmt: skip
    return review_documents.decision(result)
