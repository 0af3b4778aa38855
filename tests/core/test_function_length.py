"""No function in production code is longer than 80 lines (``docs/development.md``:
split by step, each step named for what it decides). An AST walk over the apps and
``loopx_site`` (migrations excluded).

``STILL_LONG`` lists the functions that were over the limit when the rule was set and are
not split yet, with their length then: the list only shrinks. A listed function that grew,
or one that is now within the limit and still listed, fails too — so the list is always
exactly what is left to split."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("loopx_site", "preferences", "reward_memory", "hooks", "turn_recall")
LIMIT = 80

STILL_LONG = {}


def function_lengths(root: Path = ROOT) -> dict[str, int]:
    """``"path::name"`` -> lines, for every function of production code."""
    lengths: dict[str, int] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            tree = ast.parse(path.read_text(), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    key = f"{path.relative_to(root).as_posix()}::{node.name}"
                    lines = node.end_lineno - node.lineno + 1
                    lengths[key] = max(lines, lengths.get(key, 0))
    return lengths


def over_limit(lengths: dict[str, int]) -> dict[str, int]:
    return {key: n for key, n in lengths.items() if n > LIMIT}


def test_no_function_is_longer_than_eighty_lines_except_the_ones_left_to_split():
    long = over_limit(function_lengths())
    new = {key: n for key, n in long.items() if key not in STILL_LONG}
    assert new == {}, f"split these by step (at most {LIMIT} lines each)"
    grown = {key: n for key, n in long.items() if key in STILL_LONG and n > STILL_LONG[key]}
    assert grown == {}, "a function left to split grew: split it instead"
    done = sorted(set(STILL_LONG) - set(long))
    assert done == [], "split (or gone): take it off STILL_LONG"


def test_the_walk_finds_a_long_function(tmp_path):
    package = tmp_path / "hooks"
    package.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT))
    (package / "long.py").write_text(f"def too_long():\n{body}\n")
    (package / "short.py").write_text("def fine():\n    return 1\n")
    for other in PACKAGES:
        (tmp_path / other).mkdir(exist_ok=True)
    (tmp_path / "hooks" / "migrations").mkdir()
    (tmp_path / "hooks" / "migrations" / "0001.py").write_text(f"def skipped():\n{body}\n")
    assert over_limit(function_lengths(tmp_path)) == {"hooks/long.py::too_long": LIMIT + 1}
