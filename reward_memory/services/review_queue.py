"""The review queue: an operator-control *edit* leaves a replacement candidate that the
corpus reviewer decides (accept / edit / reject / no_write) and the corpus owner then
applies with exact readback — every step through the ordinary review services, as the
signed-in operator, so the admin completes what the CLI does.

A queue item is the stored ``OperatorControl`` row of the edit. Its head is the
candidate the next decision is about: the replacement candidate, or — after a reviewer's
``edit`` — the revised candidate that edit produced (followed along the review chain).
"""

from dataclasses import dataclass
from typing import Any

from reward_memory import principals
from reward_memory.domain import candidates
from reward_memory.errors import RewardMemoryError, invalid
from reward_memory.models import Candidate, OperatorControl, Review
from reward_memory.principals import Principal
from reward_memory.services.review import (
    ReviewDecision,
    ReviewStep,
    apply_review,
    review_candidate,
)

AWAITING = "awaiting_review"
ACCEPTED = "accepted"
APPLIED = "applied"
MAX_CHAIN = 16  # reviewer edits of one replacement, followed at most


@dataclass(frozen=True)
class QueueHead:
    control: OperatorControl
    candidate: dict[str, Any]
    review: Review | None  # the head candidate's latest review (None: not yet reviewed)

    @property
    def state(self) -> str:
        if self.review is None:
            return AWAITING
        if self.review.effective_decision == "accept":
            return APPLIED if self.review.applied_at else ACCEPTED
        return self.review.effective_decision  # reject | no_write

    @property
    def summary(self) -> str:
        return str(self.candidate.get("content_summary") or "")


def head(control: OperatorControl) -> QueueHead:
    """Where an operator edit's review chain stands now (reads only)."""
    candidate = (control.document or {}).get("replacement_candidate") or {}
    review = None
    for _ in range(MAX_CHAIN):
        review = (
            Review.objects.filter(
                corpus=control.corpus, candidate__candidate_ref=candidates.candidate_ref(candidate)
            )
            .order_by("-created_at", "-pk")
            .first()
        )
        revised = (review.document or {}).get("revised_candidate") if review else None
        if review is None or review.effective_decision != "edit" or not revised:
            break
        candidate, review = revised["candidate"], None
    return QueueHead(control=control, candidate=candidate, review=review)


def _item(control_id: str) -> OperatorControl:
    control = (
        OperatorControl.objects.select_related("corpus", "record")
        .filter(control_id=control_id, action="edit")
        .first()
    )
    if control is None:
        raise RewardMemoryError(
            "operator_control_not_found",
            "No operator-control edit with this id is in the review queue.",
            field="control_id",
        )
    return control


def decide(
    *,
    control_id: str,
    decision: str,
    principal: Principal,
    edited_content_summary: str | None = None,
) -> ReviewDecision:
    """The corpus reviewer's decision on the queue item's head candidate (recorded;
    ``review_candidate`` checks that ``principal`` is the corpus's reviewer)."""
    principals.require_permission(principal, "review_queue")
    if decision not in ("accept", "edit", "reject", "no_write"):
        raise invalid("decision", "a queue decision is accept, edit, reject or no_write")
    current = head(_item(control_id))
    if current.review is not None:
        raise RewardMemoryError(
            "already_reviewed",
            f"This replacement was already decided ({current.state}).",
            field="control_id",
        )
    edit = None
    if decision == "edit":
        if not isinstance(edited_content_summary, str) or not edited_content_summary.strip():
            raise invalid("edited_content_summary", "an edit needs the edited summary")
        edit = {"content_summary": edited_content_summary}
    return review_candidate(
        candidate=current.candidate,
        decision=decision,
        principal=principal,
        corpus_id=current.control.corpus.corpus_id,
        edit=edit,
        execute=True,
    )


def apply(*, control_id: str, principal: Principal) -> ReviewStep:
    """The corpus owner applies the accepted replacement: provider sync and exact
    readback (``apply_review`` checks that ``principal`` holds the owner's authority)."""
    principals.require_permission(principal, "review_queue")
    current = head(_item(control_id))
    if current.state != ACCEPTED:
        raise RewardMemoryError(
            "not_accepted",
            f"Only an accepted replacement can be applied (it is {current.state}).",
            field="control_id",
        )
    return apply_review(review_id=current.review.review_id, principal=principal, execute=True)


# -- candidates from hosts and ingest (the admin's Candidates and Reviews lists) --------
def decide_candidate(
    *, candidate: Candidate, decision: str, principal: Principal
) -> ReviewDecision:
    """A new review of a stored candidate (a host's or an ingest's) by the signed-in
    reviewer: ``review_candidate`` on its stored document, re-checking the account's
    permission first."""
    principals.require_permission(principal, "review_candidate")
    if candidate.document is None:
        raise invalid("candidate", "the candidate's document was withheld by the shape scan")
    return review_candidate(
        candidate=candidate.document,
        decision=decision,
        corpus_id=candidate.corpus.corpus_id,
        principal=principal,
        execute=True,
    )


def apply_accepted(*, review: Review, principal: Principal) -> ReviewStep:
    """The corpus owner's apply of an accepted review (``apply_review``, with readback)."""
    principals.require_permission(principal, "apply_review")
    return apply_review(review_id=review.review_id, principal=principal, execute=True)
