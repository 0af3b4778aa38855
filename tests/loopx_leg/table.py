"""The reviewed table of known differences (differences.toml).

Each entry names a group, a step, a field path and what differs (all globs, matched with
fnmatch) and is one of two kinds:

- ``deliberate`` — a seed rule we keep on purpose; ``reason`` says which and why;
- ``open`` — a defect still to fix; ``bullet`` names the issue-23 bullet it belongs to.

The leg fails on any difference that no entry covers.
"""

from __future__ import annotations

import fnmatch
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path

TABLE = Path(__file__).resolve().parent / "differences.toml"
KINDS = {"deliberate", "open"}
WHATS = {"exit_code", "no_document", "missing", "extra", "type", "value", "length"}


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
            fnmatch.fnmatchcase(group, self.group)
            and fnmatch.fnmatchcase(step, self.step)
            and fnmatch.fnmatchcase(diff.path, self.path)
            and fnmatch.fnmatchcase(diff.kind, self.what)
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
        kind = raw.get("kind")
        if kind not in KINDS:
            raise ValueError(f"difference #{i}: kind must be deliberate or open")
        note = raw.get("reason") if kind == "deliberate" else raw.get("bullet")
        if not note:
            need = "reason" if kind == "deliberate" else "bullet"
            raise ValueError(f"difference #{i} ({raw.get('group')}): a {kind} entry needs {need}")
        what = raw.get("what", "*")
        if what != "*" and what not in WHATS:
            raise ValueError(f"difference #{i}: unknown what {what!r}")
        entries.append(
            Entry(
                group=raw["group"],
                step=raw.get("step", "*"),
                path=raw.get("path", "*"),
                what=what,
                kind=kind,
                note=note,
            )
        )
    return Table(entries)


def suggest(group: str, step: str, diff) -> str:
    """A TOML entry to paste after review (kind and note still to be decided)."""
    fields = {"group": group, "step": step, "path": diff.path, "what": diff.kind}
    inline = ", ".join(f"{k} = {json.dumps(v)}" for k, v in fields.items())
    return f'{{ {inline}, kind = "open", bullet = "…" }}'
