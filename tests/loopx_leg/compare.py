"""Structural comparison of one LoopX document with ours.

A difference is ``(path, kind, loopx, ours)``; ``path`` uses ``.key`` and ``[]`` for list
elements (indices folded, so one table entry covers every element), ``kind`` is one of:

- ``exit_code``  — the processes' exit statuses differ;
- ``no_document`` — one side printed no JSON object;
- ``missing``    — LoopX has the key, ours does not;
- ``extra``      — ours has a key LoopX does not, and the docs do not list it;
- ``type``       — both have it, JSON types differ;
- ``value``      — same type, different value (only where the inputs are equal, i.e.
  not for the volatile paths below);
- ``length``     — a list has a different number of elements.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

# Values that legitimately differ between two runs given equal inputs: only their JSON
# type is compared.
#  - timestamps written by the server's clock;
#  - revisions and cursors: opaque strings minted by each store (LoopX `file:1:…`, ours
#    the journal's own form); a revision is fed back to the side that minted it;
#  - intent hashes: the digest covers the scope, and the scope names each side's own
#    Goal state reference (LoopX: the state file's absolute path);
#  - error messages: one-line prose; the status, code and exit code carry the meaning;
#  - durations measured on each side's clock (any key ending in `_ms`);
#  - the effect-runtime / install identity LoopX reports about itself.
VOLATILE_KEYS = {
    "recorded_at",
    "generated_at",
    "created_at",
    "updated_at",
    "checked_at",
    "evaluated_at",
    "revision",
    "current_revision",
    "expected_revision",
    "next_cursor",
    "after_cursor",
    "intent_hash",
    "error",
    "message",
    "instance_id",
    "goal_instance_id",
}


@dataclass(frozen=True)
class Diff:
    path: str
    kind: str
    loopx: object
    ours: object

    def render(self, width: int = 90) -> str:
        def show(v):
            if v is _ABSENT:
                return "(absent)"
            short = isinstance(v, list | dict) and len(repr(v)) <= 60
            text = f"{_type(v)} {v!r}" if short or not isinstance(v, dict | list) else _type(v)
            return text if len(text) <= width else text[: width - 1] + "…"

        where = self.path or "<document>"
        return f"{where} [{self.kind}] loopx={show(self.loopx)} ours={show(self.ours)}"


class _Absent:
    def __repr__(self):
        return "(absent)"


_ABSENT = _Absent()


def _type(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int | float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "list"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


def _matches(path: str, patterns) -> bool:
    return any(fnmatch.fnmatchcase(path, p) for p in patterns)


def compare(
    loopx,
    ours,
    *,
    documented_extras=(),
    volatile=(),
    path: str = "",
) -> list[Diff]:
    """Differences between two JSON values; ``documented_extras``/``volatile`` are globs."""
    diffs: list[Diff] = []
    key = path.rsplit(".", 1)[-1].rstrip("[]")
    if _type(loopx) != _type(ours):
        diffs.append(Diff(path, "type", loopx, ours))
        return diffs
    if isinstance(loopx, dict):
        for k in loopx:
            sub = f"{path}.{k}" if path else k
            if k not in ours:
                diffs.append(Diff(sub, "missing", loopx[k], _ABSENT))
            else:
                diffs.extend(
                    compare(
                        loopx[k],
                        ours[k],
                        documented_extras=documented_extras,
                        volatile=volatile,
                        path=sub,
                    )
                )
        for k in ours:
            if k in loopx:
                continue
            sub = f"{path}.{k}" if path else k
            if not _matches(sub, documented_extras):
                diffs.append(Diff(sub, "extra", _ABSENT, ours[k]))
        return diffs
    if isinstance(loopx, list):
        if len(loopx) != len(ours):
            diffs.append(Diff(path, "length", len(loopx), len(ours)))
        for a, b in zip(loopx, ours, strict=False):
            diffs.extend(
                compare(
                    a, b, documented_extras=documented_extras, volatile=volatile, path=f"{path}[]"
                )
            )
        return diffs
    if key in VOLATILE_KEYS or key.endswith("_ms") or _matches(path, volatile):
        return diffs
    if loopx != ours:
        diffs.append(Diff(path, "value", loopx, ours))
    return diffs


def compare_results(lx, us, *, documented_extras=(), volatile=()) -> list[Diff]:
    """Exit code first, then the documents."""
    diffs = []
    if lx.code != us.code:
        diffs.append(Diff("", "exit_code", lx.code, us.code))
    a, b = lx.doc, us.doc
    if a is None or b is None:
        if (a is None) != (b is None):
            diffs.append(
                Diff(
                    "",
                    "no_document",
                    "no JSON" if a is None else "JSON",
                    "no JSON" if b is None else "JSON",
                )
            )
        return diffs
    diffs.extend(compare(a, b, documented_extras=documented_extras, volatile=volatile))
    # The same fold as the table uses: one entry per (path, kind).
    seen, unique = set(), []
    for d in diffs:
        if (d.path, d.kind) not in seen:
            seen.add((d.path, d.kind))
            unique.append(d)
    return unique
