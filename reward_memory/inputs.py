"""Reading JSON inputs for the command adapters (files or ``-`` for stdin).

Errors never echo the path (it may be an absolute local path): they say which option.
"""

from pathlib import Path
from typing import Any

from loopx_site.core import files
from reward_memory.errors import RewardMemoryError

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CASES = {
    "issue-fix-verified-contributor": "issue_fix_verified_contributor.json",
    "issue-fix-unverified-contributor": "issue_fix_unverified_contributor.json",
    "scoped-feedback": "scoped_feedback_event.json",
}
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
