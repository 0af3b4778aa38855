"""Reading JSON inputs for the command adapters (files or ``-`` for stdin).

Errors never echo the path (it may be an absolute local path): they say which option.
"""

import json
import sys
from pathlib import Path
from typing import Any

from reward_memory.errors import RewardMemoryError

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CASES = {
    "issue-fix-verified-contributor": "issue_fix_verified_contributor.json",
    "issue-fix-unverified-contributor": "issue_fix_unverified_contributor.json",
    "scoped-feedback": "scoped_feedback_event.json",
}
MAX_INPUT_BYTES = 256_000


def read_json(path: str, *, option: str = "input") -> dict[str, Any]:
    try:
        if path == "-":
            raw = sys.stdin.read(MAX_INPUT_BYTES + 1)
        else:
            with open(path, encoding="utf-8") as handle:
                raw = handle.read(MAX_INPUT_BYTES + 1)
    except (OSError, UnicodeDecodeError):
        raise RewardMemoryError(
            "invalid_input_file", f"--{option} could not be read as UTF-8 text.", field=option
        ) from None
    if len(raw) > MAX_INPUT_BYTES:
        raise RewardMemoryError(
            "invalid_input_file", f"--{option} exceeds {MAX_INPUT_BYTES} bytes.", field=option
        )
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        raise RewardMemoryError(
            "invalid_input_file", f"--{option} is not valid JSON.", field=option
        ) from None
    if not isinstance(value, dict):
        raise RewardMemoryError(
            "invalid_input_file", f"--{option} must hold one JSON object.", field=option
        )
    return value


def read_case(name: str) -> dict[str, Any]:
    if name not in CASES:
        raise RewardMemoryError(
            "invalid_argument", f"--case must be one of {', '.join(sorted(CASES))}", field="case"
        )
    return read_json(str(FIXTURES / CASES[name]), option="case")
