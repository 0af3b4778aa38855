"""The LoopX leg's table of known differences names exact paths: a wildcard entry could
hide a changed exit code or a traceback behind it (issue 35)."""

import pytest

from tests.loopx_leg import table
from tests.loopx_leg.compare import Diff

ENTRY = """
[[difference]]
group = "g"
kind = "deliberate"
reason = "r"
match = [{line}]
"""


def test_the_shipped_table_has_no_wildcard_path_or_kind():
    loaded = table.load()
    assert loaded.entries
    for entry in loaded.entries:
        assert "*" not in entry.path
        assert entry.what in table.WHATS


@pytest.mark.parametrize(
    "line", ["step: * [*]", "step: status [*]", "step: * [value]", "*: *current.x [value]"]
)
def test_a_wildcard_entry_is_refused(tmp_path, line):
    path = tmp_path / "differences.toml"
    path.write_text(ENTRY.format(line=f'"{line}"'))
    with pytest.raises(ValueError, match=r"bad match line|never a wildcard"):
        table.load(path)


def test_an_entry_covers_only_its_exact_path_and_kind(tmp_path):
    path = tmp_path / "differences.toml"
    path.write_text(ENTRY.format(line='"s*: status [value]", "s1: <document> [exit_code]"'))
    loaded = table.load(path)
    assert loaded.match("g", "s1", Diff("status", "value", "a", "b"))
    assert loaded.match("g", "s1", Diff("", "exit_code", 0, 2))
    assert loaded.match("g", "s2", Diff("", "exit_code", 0, 2)) is None
    assert loaded.match("g", "s1", Diff("status", "type", "a", 1)) is None
    assert loaded.match("g", "s1", Diff("status.detail", "value", "a", "b")) is None
    assert loaded.match("g", "s1", Diff("", "no_document", "JSON", "no JSON")) is None
