"""The scripted command sequences, one group per behaviour, run through both sides.

A group is a list of steps. A step runs one command on each side (LoopX's words, ours
with the top-level command's `-` as `_`), compares the two results (unless it is a set-up
step) and may capture values from each side's own document (a revision, a cursor) for
later steps of that side: `{rev}` in an argument is the value this side captured.
`{ws}` is the group's shared workspace folder, `{py}` the interpreter that runs the
scripted provider, `{prov}` that provider.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from tests.loopx_leg.compare import compare_results
from tests.loopx_leg.runner import GOAL_ID, PROVIDERS

# Keys our documents add that the README ("For LoopX hosts", and each area's section)
# lists; only these may appear in ours and not in LoopX's.
ERROR_EXTRAS = ["code", "field", "details"]  # every error envelope (spec README, Errors)
AGENT_EXTRAS = ["schema_version", "goal_id", "agent_id", "usage"]  # README: Documents


@dataclass
class Step:
    id: str
    lx: list[str] | None
    us: list[str] | None
    stdin: str | None = None
    capture: dict = field(default_factory=dict)
    compare: bool = True
    extras: list[str] = field(default_factory=list)
    volatile: list[str] = field(default_factory=list)


@dataclass
class Group:
    name: str
    area: str
    steps: list[Step]
    files: dict = field(default_factory=dict)
    extras: list[str] = field(default_factory=list)
    volatile: list[str] = field(default_factory=list)


@dataclass
class Outcome:
    group: Group
    diffs: list = field(default_factory=list)  # (step id, Diff)
    pairs: list = field(default_factory=list)
    error: str | None = None


def ours_words(words):
    """LoopX's command words → ours: the top-level command's `-` becomes `_`."""
    words = list(words)
    if words:
        words[0] = words[0].replace("-", "_")
    return words


def S(sid, *words, stdin=None, capture=None, extras=(), volatile=()):
    """The same command on both sides."""
    return Step(
        sid,
        list(words),
        ours_words(words),
        stdin=stdin,
        capture=dict(capture or {}),
        extras=list(extras),
        volatile=list(volatile),
    )


def setup(sid, lx=None, us=None, capture=None):
    """A set-up command (not compared); either side may be None."""
    return Step(sid, lx, us, capture=dict(capture or {}), compare=False)


def pair(sid, lx, us, **kw):
    """Different spellings of the same request on the two sides (compared)."""
    return Step(sid, lx, us, **kw)


# ---------------------------------------------------------------------------- running


def _get(doc, path):
    cur = doc
    for part in path.split("."):
        if isinstance(cur, dict):
            cur = cur.get(part)
        else:
            return None
    return cur


def _subst(text: str, ctx: dict) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: str(ctx.get(m.group(1), m.group(0))), text)


def run_group(group: Group, loopx, ours, ws, root: Path) -> Outcome:
    outcome = Outcome(group)
    base = {"ws": str(ws.root), "py": sys.executable, "prov": str(PROVIDERS / "scripted.py")}
    for name, content in group.files.items():
        text = content if isinstance(content, str) else json.dumps(content)
        ws.file(name, _subst(text, base))
    (ws.root / "project").mkdir(parents=True, exist_ok=True)
    try:
        states = {"loopx": loopx.prepare(root), "ours": ours.prepare(root)}
    except Exception as exc:  # noqa: BLE001 — reported as a group error
        outcome.error = f"prepare failed: {exc}"
        return outcome
    ctx = {"loopx": dict(base), "ours": dict(base)}
    for step in group.steps:
        results = {}

        def go(side, argv, step=step, results=results):
            if argv is None:
                return
            args = [_subst(a, ctx[side.name]) for a in argv]
            stdin = _subst(step.stdin, ctx[side.name]) if step.stdin is not None else None
            results[side.name] = side.run(states[side.name], args, stdin)

        threads = [
            threading.Thread(target=go, args=(loopx, step.lx)),
            threading.Thread(target=go, args=(ours, step.us)),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for side_name, result in results.items():
            doc = result.doc
            for var, path in step.capture.items():
                value = _get(doc, path) if doc else None
                ctx[side_name][var] = "none" if value is None else value
        lx, us = results.get("loopx"), results.get("ours")
        outcome.pairs.append(
            {
                "step": step.id,
                "compare": step.compare,
                **{
                    name: {
                        "argv": r.argv[-40:],
                        "code": r.code,
                        "doc": r.doc,
                        "stdout": None if r.doc else r.stdout[-2000:],
                        "stderr": r.stderr[-2000:],
                        "seconds": round(r.seconds, 2),
                    }
                    for name, r in results.items()
                },
            }
        )
        if not step.compare:
            for name, r in results.items():
                if r.code not in (0,) and r.doc is None:
                    outcome.error = f"set-up step {step.id} failed on {name}: {r.stderr[-300:]}"
                    return outcome
            continue
        for name, r in (("loopx", lx), ("ours", us)):
            if r is not None and r.doc is None and r.code not in (0, 2):
                outcome.error = (
                    f"step {step.id}: {name} exited {r.code} without a document: "
                    f"{(r.stderr or r.stdout)[-300:]!r}"
                )
        diffs = compare_results(
            lx,
            us,
            documented_extras=[*ERROR_EXTRAS, *group.extras, *step.extras]
            if us.doc and us.doc.get("ok") is False
            else [*group.extras, *step.extras],
            volatile=[*group.volatile, *step.volatile],
        )
        outcome.diffs.extend((step.id, d) for d in diffs)
    return outcome


# ---------------------------------------------------------------------------- groups

SCOPE = ["--goal-id", GOAL_ID, "--agent-id", "author"]
AGENT = ["semantic-preference", "agent"]


def remember(key, statement, op, rev="{rev}", *extra, quote=None, source="owner-msg-1"):
    return [
        *AGENT,
        "remember",
        *SCOPE,
        "--key",
        key,
        "--statement",
        statement,
        "--source-ref",
        source,
        "--source-quote",
        quote or statement,
        "--expected-revision",
        rev,
        "--operation-id",
        op,
        *extra,
    ]


def retire(key, op, rev="{rev}", *extra, source="owner-msg-9"):
    return [
        *AGENT,
        "retire",
        *SCOPE,
        "--key",
        key,
        "--source-ref",
        source,
        "--source-quote",
        "Forget that.",
        "--expected-revision",
        rev,
        "--operation-id",
        op,
        *extra,
    ]


READ = [*AGENT, "read", *SCOPE]
REV = {"rev": "current.revision"}

JOURNAL = "preference journal"
GROUPS: list[Group] = [
    Group(
        "journal.read-empty",
        JOURNAL,
        [S("read", *READ)],
        extras=AGENT_EXTRAS,
    ),
    Group(
        "journal.remember-preview-apply-replay",
        JOURNAL,
        [
            S("read", *READ, capture=REV),
            S("preview", *remember("review.style", "Keep PRs small.", "op-1")),
            S("apply", *remember("review.style", "Keep PRs small.", "op-1", "{rev}", "--execute")),
            S("read-after", *READ, capture=REV),
            S("replay", *remember("review.style", "Keep PRs small.", "op-1", "none", "--execute")),
        ],
        extras=AGENT_EXTRAS,
    ),
]
