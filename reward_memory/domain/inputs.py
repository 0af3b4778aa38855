"""Reading JSON inputs for the command adapters (files or ``-`` for stdin).

Errors never echo the path (it may be an absolute local path): they say which option.
"""

from pathlib import Path
from typing import Any

from loopx_site.core import files
from reward_memory.errors import RewardMemoryError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CASES = {
    "issue-fix-verified-contributor": "issue_fix_verified_contributor.json",
    "issue-fix-unverified-contributor": "issue_fix_unverified_contributor.json",
    "scoped-feedback": "scoped_feedback_event.json",
}
# LoopX's fixture review (its ``candidate-review`` applies it to the shipped case): the
# reviewer and review refs, reasoning and edit a shipped case's *preview* shows in the
# ``review`` object. Labels only: a recorded review names the authenticated reviewer.
CASE_REVIEW = "case_review.json"
MAX_INPUT_BYTES = 256_000


def read_json(path: str, *, option: str = "input") -> dict[str, Any]:
    """One JSON object from a regular file or ``-`` (stdin), size- and depth-capped."""
    return files.read_json(
        path, option=option, area=RewardMemoryError.area, max_bytes=MAX_INPUT_BYTES
    )


def read_case(name: str) -> dict[str, Any]:
    if name not in CASES:
        raise RewardMemoryError(
            "invalid_argument", f"--case must be one of {', '.join(sorted(CASES))}", field="case"
        )
    return read_json(str(FIXTURES / CASES[name]), option="case")


def read_case_review(decision: str) -> dict[str, Any]:
    """The fixture review of a shipped case's preview for ``decision``: ``review``
    (LoopX's ``reviewer_ref``/``review_ref``/``reasoning_summary``) and ``edit``."""
    fixture = read_json(str(FIXTURES / CASE_REVIEW), option="case")
    return {
        "review": {
            "reviewer_ref": fixture["reviewer_ref"],
            "review_ref": fixture["review_refs"][decision],
            "reasoning_summary": fixture["reasoning_summary"],
        },
        "edit": fixture["edit"],
    }
