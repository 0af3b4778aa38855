"""The reviewed table of known differences (differences.toml).

Each `[[difference]]` names a group (glob), its kind and a list of `match` lines
`"STEP: PATH [WHAT]"`: STEP is a glob where only `*` is special; PATH is the exact path it
excuses (`[]` in a path is a list element, `<document>` the exit code or the document as
a whole) — never a wildcard, so a changed exit code or a new key can never hide behind an
entry; WHAT is exit_code, no_document, missing, extra, type, value or length (never `*`).
The kind is one of:

- ``deliberate`` — a seed rule we keep on purpose; ``reason`` says which and why;
- ``open`` — a defect still to fix; ``bullet`` names the issue-23 bullet it belongs to.

The leg fails on any difference that no line covers.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

TABLE = Path(__file__).resolve().parent / "differences.toml"
KINDS = {"deliberate", "open"}
WHATS = {"exit_code", "no_document", "missing", "extra", "type", "value", "length"}
LINE = re.compile(r"^(?P<step>[^:]+): (?P<path>.*) \[(?P<what>[a-z_*]+)\]$")


def _path_matches(path: str, diff_path: str) -> bool:
    """PATH is exact; ``<document>`` names the empty path (exit code, no document)."""
    return diff_path == ("" if path == "<document>" else path)


def _glob(pattern: str, value: str) -> bool:
    return fnmatch.fnmatchcase(value, pattern.replace("[", "[[]"))


@dataclass(frozen=True)
class Entry:
    group: str
    step: str
    path: str
    what: str
    kind: str
    note: str

    @property
    def key(self):
        return (self.group, self.step, self.path, self.what)

    def covers(self, group: str, step: str, diff) -> bool:
        return (
            _glob(self.group, group)
            and _glob(self.step, step)
            and _path_matches(self.path, diff.path)
            and self.what == diff.kind
        )


class Table:
    def __init__(self, entries):
        self.entries = entries

    def match(self, group: str, step: str, diff):
        return next((e for e in self.entries if e.covers(group, step, diff)), None)


def load(path: Path = TABLE) -> Table:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    entries = []
    for i, raw in enumerate(data.get("difference", [])):
        label = f"difference #{i} ({raw.get('group')})"
        kind = raw.get("kind")
        if kind not in KINDS:
            raise ValueError(f"{label}: kind must be deliberate or open")
        need = "reason" if kind == "deliberate" else "bullet"
        note = raw.get(need)
        if not note:
            raise ValueError(f"{label}: a {kind} entry needs {need}")
        for line in raw.get("match", []):
            m = LINE.match(line)
            if not m or m["what"] not in WHATS:
                raise ValueError(f"{label}: bad match line {line!r} (want 'STEP: PATH [WHAT]')")
            if "*" in m["path"] or "?" in m["path"]:
                raise ValueError(f"{label}: {line!r}: a PATH is exact, never a wildcard")
            entries.append(Entry(raw["group"], m["step"], m["path"], m["what"], kind, note))
    return Table(entries)


def line(step: str, diff) -> str:
    """The match line that covers exactly this difference."""
    return f"{step}: {diff.path or '<document>'} [{diff.kind}]"


def suggest(group: str, step: str, diff) -> str:
    return f'group "{group}": match line "{line(step, diff)}"'
