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

from tests.loopx_leg.compare import Diff, compare_results
from tests.loopx_leg.runner import GOAL_ID, PROVIDERS

# Keys our documents add that the README ("For LoopX hosts", and each area's section)
# lists; only these may appear in ours and not in LoopX's.
# Every error envelope (spec README "Errors", loopx_wire.md "Every document"): LoopX's
# conflict documents carry neither schema_version nor error; ours always do.
ERROR_EXTRAS = ["schema_version", "error", "code", "field", "details"]
# docs/loopx-hosts.md "Documents": our detail beside LoopX's fields.
AGENT_EXTRAS = [
    "schema_version",
    "goal_id",
    "agent_id",
    "usage",
    "events*.sequence",
    "events*.kind",
    "events*.revision",
]
# README "For LoopX hosts", Reward Memory documents: "with our detail beside it".
ARCHITECTURE_EXTRAS = [  # docs/loopx-hosts.md: Reward Memory documents
    "classes",
    "precedence_layers",
    "record_lifecycle_states",
    "stages",
    "guard_reason_codes",
    "core_boundary",
    "working_context_kinds",
    "precedence_is_decision_table",
    "record_contract",
    "confidence_levels",
    "confidence_raises_authority",
    "lifecycle_transitions",
    "provider_interface",
    "user_gates",
]
# docs/loopx-hosts.md, candidate-review: our decision record beside LoopX's fields.
REVIEW_EXTRAS = [
    "adapter_id",
    "guard",
    "next_step",
    "review_id",
    "corpus_id",
    "candidate_ref",
    "candidate_digest",
    "candidate",
    "target_class",
    "reviewer",
    "revised_candidate",
    "target_record_ref",
    "writes_provider",
    "recorded",
    "adapter.adapter_id",
    "adapter.shared_candidate_ref",
]
# docs/loopx-hosts.md "Ingest input": our receipt's detail beside LoopX's fields.
INGEST_RECEIPT_EXTRAS = [
    "receipt_id",
    "executed",
    "adapter",
    "event_ref",
    "goal_id",
    "agent_id",
    "surface",
    "memory_class",
    "candidate_digest",
    "policy_digest",
    "record_ref",
    "content_digest",
    "observed_at",
    "record_state",
    "replayed",
    "readback",
    "source_verification",
    "provider_call_count",
    "provider",
    "guard.status",
    "guard.reasons",
    "retry",
    "setup_guidance",
    "user_gate",
]
# docs/loopx-hosts.md, dogfood-evaluate: the gate's status word, the stored controls, and
# two flags beside LoopX's batch.
DOGFOOD_EXTRAS = [
    "stage4_release_gate",
    "operator_control_records",
    "utility_counts_toward_readiness",
    "external_writes_performed",
]
# docs/loopx-hosts.md, experiment-status: the effective flags as one object, and (when
# available) the surface count and recall profile ids.
EXPERIMENT_STATUS_EXTRAS = ["automation", "surface_count", "recall_profile_ids"]
# docs/loopx-hosts.md "Semantic recall": our recall and doctor documents keep one key set
# whatever their status (recall: items, truncated, failure_kind, failure_policy, limit,
# provider; doctor: the ready-path fields and flags, config, provider).
RECALL_EXTRAS = [
    "items",
    "truncated",
    "failure_kind",
    "failure_policy",
    "limit",
    "provider",
    "config",
    "provider_id",
    "probe_configured",
    "setup_hints",
    "automatic_setup_performed",
    "credential_writes_performed",
    "service_writes_performed",
]


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
    save: str | None = None  # write this side's document to {ws}/<save>
    # Ours only (no LoopX command prints this document): {path: allowed values} or
    # {path: {"not": [values]}}; "" is the exit code. A violation is reported as a
    # difference like any other.
    expect: dict | None = None


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


_MISSING = object()


def _get(doc, path):
    cur = doc
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return _MISSING
        cur = cur[part]
    return cur


def _subst(text: str, ctx: dict) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: str(ctx.get(m.group(1), m.group(0))), text)


def run_group(group: Group, loopx, ours, ws, root: Path) -> Outcome:
    outcome = Outcome(group)
    base = {
        "ws": str(ws.root),
        "py": sys.executable,
        "prov": str(PROVIDERS / "scripted.py"),
        "legdir": str(Path(__file__).resolve().parent),
    }
    for name, content in group.files.items():
        text = content if isinstance(content, str) else json.dumps(content)
        ws.file(name, _subst(text, base))
    (ws.root / "project").mkdir(parents=True, exist_ok=True)
    try:
        states = {"loopx": loopx.prepare(root), "ours": ours.prepare(root)}
    except Exception as exc:
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
            if step.save and doc is not None:
                ws.file(step.save, json.dumps(doc))
            for var, path in step.capture.items():
                # A document without the field (an error) keeps the earlier value; a null
                # revision is the empty store's `none`.
                value = _get(doc, path) if doc else _MISSING
                if value is not _MISSING:
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
        outcome.diffs.extend((step.id, d) for d in _diffs(group, step, lx, us))
    return outcome


def _expected(step, us):
    diffs = []
    for path, allowed in step.expect.items():
        actual = us.code if path == "" else (_get(us.doc, path) if us.doc else _MISSING)
        if isinstance(allowed, dict):
            ok = actual is _MISSING or actual not in allowed["not"]
        else:
            ok = actual is not _MISSING and actual in allowed
        if not ok:
            shown = "(absent)" if actual is _MISSING else actual
            diffs.append(Diff(path, "exit_code" if path == "" else "value", allowed, shown))
    return diffs


# docs/loopx-hosts.md "Extensions": our operation and state documents' detail beside
# LoopX's fields.
EXTENSION_EXTRAS = [
    "status",
    "extension",
    "version",
    "revision",
    "previous_revision",
    "rollback_available",
    "doctor",
    "would_change",
    "active_revision",
    *(
        f"extensions*.{key}"
        for key in (
            "extension_id",
            "active",
            "version",
            "description",
            "capability",
            "protocol",
            "permission",
            "timeout_seconds",
            "doctor",
            "manifest_digest",
            "installed_at",
            "updated_at",
            "activated_at",
        )
    ),
]


def _diffs(group, step, lx, us):
    if step.expect is not None:
        return _expected(step, us)
    extras = [*group.extras, *step.extras]
    if group.area == JOURNAL:
        extras += AGENT_EXTRAS
    if (
        group.area in (RECALL, EXTENSIONS)
        and us.doc
        and us.doc.get("schema_version")
        in (
            "semantic_preference_recall_v0",
            "semantic_preference_provider_doctor_v0",
            "semantic_preference_error_v0",  # provider_failed: failure_kind beside the envelope
        )
    ):
        extras += RECALL_EXTRAS
    if us.doc and us.doc.get("schema_version") in (
        "loopx_extension_operation_v0",
        "loopx_extension_state_v0",
    ):
        extras += EXTENSION_EXTRAS
    if us.doc and us.doc.get("ok") is False:
        extras += ERROR_EXTRAS
    return compare_results(
        lx,
        us,
        documented_extras=extras,
        volatile=[*group.volatile, *step.volatile],
    )


class _Dumped:
    def __init__(self, raw):
        self.code, self.doc = raw["code"], raw["doc"]


def recompare(group: Group, dump: Path) -> Outcome:
    """Compare the pairs of an earlier ``--dump`` again (table and rule work, no run)."""
    outcome = Outcome(group)
    path = dump / f"{group.name}.json"
    if not path.exists():
        outcome.error = "not in the dump"
        return outcome
    steps = {s.id: s for s in group.steps}
    for pair_ in json.loads(path.read_text()):
        step = steps.get(pair_["step"])
        if step is None or not step.compare or "ours" not in pair_:
            continue
        if "loopx" not in pair_ and step.expect is None:
            continue
        lx = _Dumped(pair_["loopx"]) if "loopx" in pair_ else None
        us = _Dumped(pair_["ours"])
        outcome.diffs.extend((step.id, d) for d in _diffs(group, step, lx, us))
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

HISTORY = [*AGENT, "history", *SCOPE]
JOURNAL = "preference journal"
RECALL = "semantic recall"
RECEIPTS = "receipts"
EXTENSIONS = "extensions"
RM = "reward memory"
TURN = "agent turn recall"
QUOTA = "quota"

SURFACE = "issue_fix.pr_description"


def config(mode="items", *, enabled=True, policy="fail_open", probe=None, argv=None):
    provider = {
        "id": "leg_provider",
        "argv": argv or ["{py}", "{prov}", mode],
        "timeout_seconds": 20,
    }
    if probe is not None:
        provider["probe_argv"] = probe
    return {
        "schema_version": "semantic_preference_hook_config_v0",
        "enabled": enabled,
        "provider": provider,
        "surfaces": {
            SURFACE: {"query": "PR description preferences", "limit": 2, "failure_policy": policy}
        },
    }


def recall(cfg, *extra, surface=SURFACE):
    return [
        "semantic-preference",
        "recall",
        "--project",
        "{ws}/project",
        "--config",
        "{ws}/" + cfg,
        "--surface",
        surface,
        *extra,
    ]


def doctor(cfg, *extra):
    return [
        "semantic-preference",
        "doctor",
        "--project",
        "{ws}/project",
        "--config",
        "{ws}/" + cfg,
        *extra,
    ]


def receipt(*extra, surface=SURFACE, app="app-1", outcome="applied"):
    return [
        "semantic-preference",
        "receipt",
        "--surface",
        surface,
        "--application-id",
        app,
        "--outcome",
        outcome,
        *extra,
    ]


def journal_steps(prefix_steps, *steps):
    return [S("read", *READ, capture=REV), *prefix_steps, *steps]


def keys(n, start=0):
    """Set-up-free capacity fill: n applied remembers, each fed the side's own revision."""
    return [
        S(
            f"fill-{i}",
            *remember(f"k{i:02d}", f"Preference number {i}.", f"fill-{i}", "{rev}", "--execute"),
            capture=REV,
        )
        for i in range(start, start + n)
    ]


TOML_MANIFEST = """schema_version = "loopx_extension_manifest_v0"
id = "leg-provider"
version = "1.0.0"
requires_loopx_api = ">=1,<2"
permissions = ["semantic_preference.read"]

[runtime]
protocol = "semantic_preference_provider_v0"
entrypoint = "{ws}/provider.sh"
doctor_args = ["doctor"]
required_permissions = ["semantic_preference.read"]
timeout_seconds = 20

[[implements]]
capability_id = "semantic-preference"
protocol = "semantic_preference_provider_v0"
"""
PROVIDER_SH = '#!/bin/sh\nif [ "$1" = doctor ]; then exit 0; fi\nexec "{py}" "{prov}" items\n'

EXT_CONFIG = {
    "schema_version": "semantic_preference_hook_config_v0",
    "enabled": True,
    "provider": {"id": "leg_provider", "extension_id": "leg-provider"},
    "surfaces": {SURFACE: {"query": "PR description preferences", "limit": 2}},
}


def ext(sid, action, *extra):
    """The extension verb: LoopX `extension …`, ours `semantic_preference extension …`."""
    return pair(
        sid, ["extension", action, *extra], ["semantic_preference", "extension", action, *extra]
    )


SCOPED_EVENT = {
    "schema_version": "scoped_feedback_reward_memory_event_v0",
    "feedback_ref": "feedback:leg/pr/42",
    "workspace_ref": "ws",
    "project_ref": "repository:example",
    "surface_id": SURFACE,
    "target_class": "soft_preference",
    "content_summary": "Lead PR descriptions with the user-visible effect.",
    "source": {
        "source_kind": "maintainer_feedback",
        "source_ref": "review:leg#42/r-1",
        "actor_ref": "user:maint-1",
        "actor_role": "maintainer",
    },
    "reasoning": {"summary": "Two maintainers asked for the effect first.", "confidence": "medium"},
    "guard_context": {
        "source_freshness": "current",
        "conflict_state": "clear",
        "current_artifact_verified": True,
    },
    "requested_action_scopes": [],
    "raw_content_captured": False,
}
ROUTE = ["--goal-id", GOAL_ID, "--agent-id", "author"]


def ingest(name, *extra):
    return ["reward-memory", "ingest-event", "--input", "{ws}/" + name, *extra]


QUOTA_LX = ["quota", "should-run", "--goal-id", GOAL_ID, "--agent-id", "author"]


def turn(packet, *extra, turn_id="turn-44"):
    return [
        "agent-turn-recall",
        "--goal-id",
        GOAL_ID,
        "--agent-id",
        "author",
        "--turn-instance-id",
        turn_id,
        "--quota-decision-json",
        packet,
        *extra,
    ]


API_PREFS = f"goals/{GOAL_ID}/agents/author/preferences"
API_REMEMBER = json.dumps(
    {
        "key": "review.style",
        "statement": "Keep PRs small.",
        "source_ref": "owner-msg-1",
        "source_quote": "Keep PRs small.",
        "expected_revision": None,
        "operation_id": "op-1",
        "execute": True,
    }
)
API_STALE = json.dumps(
    {
        "key": "review.other",
        "statement": "Other.",
        "source_ref": "owner-msg-1",
        "source_quote": "Other.",
        "expected_revision": None,
        "operation_id": "op-2",
        "execute": True,
    }
)

GROUPS: list[Group] = [
    # ---- the preference journal: every transition, its edges, capacity
    Group("journal.read-empty", JOURNAL, [S("read", *READ)]),
    Group(
        "journal.remember-preview-apply-replay",
        JOURNAL,
        journal_steps(
            [],
            S("preview", *remember("review.style", "Keep PRs small.", "op-1")),
            S("apply", *remember("review.style", "Keep PRs small.", "op-1", "{rev}", "--execute")),
            S("read-after", *READ, capture=REV),
            S("replay", *remember("review.style", "Keep PRs small.", "op-1", "none", "--execute")),
        ),
    ),
    Group(
        "journal.correct-retire-history",
        JOURNAL,
        journal_steps(
            [],
            S(
                "apply",
                *remember("review.style", "Keep PRs small.", "op-1", "{rev}", "--execute"),
                capture=REV,
            ),
            S(
                "correct",
                *remember(
                    "review.style",
                    "Keep PRs tiny.",
                    "op-2",
                    "{rev}",
                    "--execute",
                    source="owner-msg-2",
                ),
                capture=REV,
            ),
            S("retire-preview", *retire("review.style", "op-3")),
            S("retire", *retire("review.style", "op-3", "{rev}", "--execute"), capture=REV),
            S("read-retired", *READ),
            S("history", *HISTORY, capture={"cursor": "next_cursor"}),
            S("history-after-end", *HISTORY, "--after-cursor", "{cursor}"),
        ),
    ),
    Group(
        "journal.remember-after-retire",
        JOURNAL,
        journal_steps(
            [],
            S(
                "apply",
                *remember("review.style", "Keep PRs small.", "op-1", "{rev}", "--execute"),
                capture=REV,
            ),
            S("retire", *retire("review.style", "op-2", "{rev}", "--execute"), capture=REV),
            S(
                "same-source-again",
                *remember("review.style", "Keep PRs small.", "op-3", "{rev}", "--execute"),
                capture=REV,
            ),
            S(
                "fresh-source",
                *remember(
                    "review.style",
                    "Keep PRs small.",
                    "op-4",
                    "{rev}",
                    "--execute",
                    source="owner-msg-7",
                ),
            ),
        ),
    ),
    Group(
        "journal.history-pages",
        JOURNAL,
        [
            S("read", *READ, capture=REV),
            *keys(21),
            S("page-1", *HISTORY, capture={"cursor": "next_cursor"}),
            S("page-2", *HISTORY, "--after-cursor", "{cursor}", capture={"cursor": "next_cursor"}),
            S("page-3", *HISTORY, "--after-cursor", "{cursor}"),
            S("bad-cursor", *HISTORY, "--after-cursor", "not-a-cursor"),
        ],
    ),
    Group(
        "journal.conflicts",
        JOURNAL,
        journal_steps(
            [],
            S(
                "apply",
                *remember("review.style", "Keep PRs small.", "op-1", "{rev}", "--execute"),
                capture=REV,
            ),
            S("stale-revision", *remember("review.other", "Other.", "op-2", "none", "--execute")),
            S(
                "foreign-revision",
                *remember(
                    "review.other", "Other.", "op-3", "file:1:abcdef0123456789abcdef01", "--execute"
                ),
            ),
            S("garbage-revision", *remember("review.other", "Other.", "op-4", "zzz", "--execute")),
            S(
                "operation-conflict",
                *remember("review.style", "Something else.", "op-1", "{rev}", "--execute"),
            ),
            S("retire-absent-key", *retire("never.set", "op-5", "{rev}", "--execute")),
        ),
    ),
    Group(
        "journal.input-edges",
        JOURNAL,
        journal_steps(
            [],
            S(
                "missing-statement",
                *AGENT,
                "remember",
                *SCOPE,
                "--key",
                "review",
                "--expected-revision",
                "none",
                "--operation-id",
                "e1",
            ),
            S(
                "missing-revision",
                *AGENT,
                "remember",
                *SCOPE,
                "--key",
                "review",
                "--statement",
                "x",
                "--operation-id",
                "e2",
            ),
            S("whitespace-statement", *remember("review.ws", "   ", "e3")),
            S("emoji-statement", *remember("review.emoji", "\U0001f600" * 700, "e4")),
            S("bad-key", *remember("Bad Key!", "Statement.", "e5")),
            S(
                "expires-past",
                *remember(
                    "review.exp",
                    "Statement.",
                    "e6",
                    "{rev}",
                    "--expires-at",
                    "2020-01-01T00:00:00Z",
                ),
            ),
            S(
                "expires-future",
                *remember(
                    "review.exp",
                    "Statement.",
                    "e7",
                    "{rev}",
                    "--expires-at",
                    "2099-01-01T00:00:00Z",
                ),
            ),
            S(
                "expires-micro",
                *remember(
                    "review.exp",
                    "Statement.",
                    "e8",
                    "{rev}",
                    "--expires-at",
                    "2099-01-01T00:00:00.123456Z",
                ),
            ),
            S(
                "expires-offset",
                *remember(
                    "review.exp",
                    "Statement.",
                    "e9",
                    "{rev}",
                    "--expires-at",
                    "2099-01-01T08:00:00+08:00",
                ),
            ),
            S(
                "expires-garbage",
                *remember("review.exp", "Statement.", "e10", "{rev}", "--expires-at", "tomorrow"),
            ),
            S("long-quote", *remember("review.q", "Statement.", "e11", quote="q" * 2000)),
            S("unregistered-agent", *AGENT, "read", "--goal-id", GOAL_ID, "--agent-id", "nobody"),
            S("unknown-goal", *AGENT, "read", "--goal-id", "no-such-goal", "--agent-id", "author"),
        ),
    ),
    Group(
        "journal.capacity",
        JOURNAL,
        [
            S("read", *READ, capture=REV),
            # Statements and quotes near their bounds (1200 / 1600 characters): the 12th
            # record crosses the 32 KiB bound on the serialised view.
            *[
                S(
                    f"big-{i}",
                    *remember(
                        f"big{i:02d}",
                        f"{i:02d} " + "x" * 1140,
                        f"big-{i}",
                        "{rev}",
                        "--execute",
                        quote="q" * 1500,
                    ),
                    capture=REV,
                )
                for i in range(12)
            ],
            S("read-full", *READ),
        ],
    ),
    # ---- the same journal steps through our API (LoopX has only the CLI)
    Group(
        "journal.api",
        JOURNAL,
        [
            pair("read", READ, ["@api", "GET", f"{API_PREFS}/"], capture=REV),
            pair(
                "remember",
                remember("review.style", "Keep PRs small.", "op-1", "{rev}", "--execute"),
                ["@api", "POST", f"{API_PREFS}/remember/", API_REMEMBER],
                capture=REV,
            ),
            pair(
                "stale-revision",
                remember("review.other", "Other.", "op-2", "none", "--execute"),
                ["@api", "POST", f"{API_PREFS}/remember/", API_STALE],
            ),
            pair("history", HISTORY, ["@api", "GET", f"{API_PREFS}/history/"]),
        ],
    ),
    # ---- semantic recall, doctor, receipts
    Group(
        "recall.preview-and-execute",
        RECALL,
        [
            S("preview", *recall("cfg.json")),
            S("execute", *recall("cfg.json", "--execute")),
            S(
                "context",
                *recall(
                    "cfg.json", "--context", "repository=owner/repo", "--context", "pr_number=7"
                ),
            ),
        ],
        files={"cfg.json": config("items")},
    ),
    Group(
        "recall.inventory-and-guidance",
        RECALL,
        [
            S("execute", *recall("cfg.json", "--execute")),
            S("items-without-summary", *recall("nosummary.json", "--execute")),
        ],
        files={"cfg.json": config("inventory"), "nosummary.json": config("nosummary")},
    ),
    Group(
        "recall.disabled-and-failures",
        RECALL,
        [
            S("disabled", *recall("off.json", "--execute")),
            S("fail-open", *recall("fail.json", "--execute")),
            S("garbage-open", *recall("garbage.json", "--execute")),
            S("fail-closed", *recall("closed.json", "--execute")),
            S("unknown-surface", *recall("fail.json", "--execute", surface="issue_fix.other")),
            S("bad-surface", *recall("fail.json", surface="Issue_fix.PR")),
            S("missing-config", *recall("nope.json")),
        ],
        files={
            "off.json": config("items", enabled=False),
            "fail.json": config("fail"),
            "garbage.json": config("garbage"),
            "closed.json": config("fail", policy="fail_closed"),
        },
    ),
    Group(
        "recall.context-rules",
        RECALL,
        [
            S("dash-key", *recall("cfg.json", "--context", "pr-number=1")),
            S("empty-value", *recall("cfg.json", "--context", "repository=")),
            S("repeated-key", *recall("cfg.json", "--context", "a=1", "--context", "a=2")),
            S(
                "21-entries",
                *recall("cfg.json", *[x for i in range(21) for x in ("--context", f"k{i}=v")]),
            ),
            S("no-equals", *recall("cfg.json", "--context", "novalue")),
            S("long-value", *recall("cfg.json", "--context", "a=" + "v" * 501)),
        ],
        files={"cfg.json": config("items")},
    ),
    Group(
        "doctor.statuses",
        RECALL,
        [
            S("probe-required", *doctor("probe.json")),
            S("ready", *doctor("probe.json", "--execute")),
            S("no-probe", *doctor("cfg.json")),
            S("probe-fails", *doctor("badprobe.json", "--execute")),
            S("missing-command", *doctor("missing.json")),
            S("disabled", *doctor("off.json")),
        ],
        files={
            "probe.json": config("items", probe=["/bin/true"]),
            "cfg.json": config("items"),
            "badprobe.json": config("items", probe=["/bin/false"]),
            "missing.json": config("items", argv=["/nonexistent/provider"]),
            "off.json": config("items", enabled=False),
        },
    ),
    Group(
        "receipts.application",
        RECEIPTS,
        [
            S(
                "applied-refs",
                *receipt("--preference-ref", "pref-one", "--preference-ref", "pref-two"),
            ),
            S("no-refs", *receipt(outcome="ignored")),
            S(
                "artifact",
                *receipt("--artifact-ref", "https://example.invalid/pr/1", outcome="failed"),
            ),
            S("repo-style-id", *receipt(app="owner/repo#123")),
            S("long-id", *receipt(app="a" * 200)),
            S("21-refs", *receipt(*[x for i in range(21) for x in ("--preference-ref", f"p{i}")])),
            S("bad-surface", *receipt(surface="Issue_fix.PR")),
            S("bad-outcome", *receipt(outcome="maybe")),
        ],
    ),
    Group(
        "receipts.maintenance",
        RECEIPTS,
        [
            S(
                "verified",
                "semantic-preference",
                "maintenance-receipt",
                "--trigger",
                "explicit_feedback",
                "--outcome",
                "verified",
                "--corpus-id",
                "project_preferences",
                "--scope-ref",
                "project-leg",
                "--evidence-ref",
                "evidence-1",
            ),
            S(
                "no-write",
                "semantic-preference",
                "maintenance-receipt",
                "--trigger",
                "source_truth_changed",
                "--outcome",
                "no_write_rationale",
                "--corpus-id",
                "project_preferences",
            ),
            S(
                "bad-corpus",
                "semantic-preference",
                "maintenance-receipt",
                "--trigger",
                "explicit_feedback",
                "--outcome",
                "failed",
                "--corpus-id",
                "Bad Corpus",
            ),
        ],
    ),
    # ---- extensions: LoopX's TOML manifest, lifecycle, bound configs
    Group(
        "extensions.toml-lifecycle",
        EXTENSIONS,
        [
            ext("install-preview", "install", "--manifest", "{ws}/extension.toml"),
            ext("install", "install", "--manifest", "{ws}/extension.toml", "--execute"),
            ext("list", "list"),
            S("doctor-bound", *doctor("ext.json", "--execute")),
            S("recall-bound", *recall("ext.json", "--execute")),
            ext("reinstall-same", "install", "--manifest", "{ws}/extension.toml", "--execute"),
            ext("disable", "disable", "leg-provider", "--execute"),
            S("doctor-disabled", *doctor("ext.json", "--execute")),
            S("recall-disabled", *recall("ext.json", "--execute")),
            ext("enable", "enable", "leg-provider", "--execute"),
        ],
        files={"extension.toml": TOML_MANIFEST, "provider.sh": PROVIDER_SH, "ext.json": EXT_CONFIG},
    ),
    Group(
        "extensions.unbound-config",
        EXTENSIONS,
        [
            S("doctor-uninstalled", *doctor("ext.json")),
            S("recall-uninstalled", *recall("ext.json", "--execute")),
            S("recall-uninstalled-preview", *recall("ext.json")),
            ext("install-bad-manifest", "install", "--manifest", "{ws}/bad.toml", "--execute"),
        ],
        files={
            "ext.json": EXT_CONFIG,
            "bad.toml": "schema_version = 'loopx_extension_manifest_v0'\n",
        },
    ),
    # ---- Reward Memory
    Group(
        "reward.architecture",
        RM,
        [S("architecture", "reward-memory", "architecture")],
        extras=ARCHITECTURE_EXTRAS,
    ),
    Group(
        "reward.route-check",
        RM,
        [
            S("case", "reward-memory", "route-check", "--case", "pr-3237"),
            S(
                "bug-with-evidence",
                "reward-memory",
                "route-check",
                "--behavior-status",
                "bug_confirmed",
                "--surface-count",
                "1",
                "--named-reproduction",
                "--named-validation",
            ),
            S(
                "uncertain",
                "reward-memory",
                "route-check",
                "--behavior-status",
                "uncertain",
                "--surface-count",
                "3",
                "--semantic-contract-change",
                "--retrieval-or-memory-quality-claim",
            ),
        ],
    ),
    Group(
        "reward.evaluate",
        RM,
        [S("evaluate", "reward-memory", "evaluate")],
        # docs/loopx-hosts.md: our guards' own codes beside LoopX's reason_codes
        extras=["cases*.evidence.guard_reason_codes"],
    ),
    Group(
        "reward.candidate-review",
        RM,
        [
            S("default", "reward-memory", "candidate-review"),
            *[
                S(
                    d,
                    "reward-memory",
                    "candidate-review",
                    "--case",
                    "issue-fix-verified-contributor",
                    "--decision",
                    d,
                )
                for d in ("accept", "edit", "reject", "retire", "no_write")
            ],
        ],
        extras=REVIEW_EXTRAS,
    ),
    Group(
        "reward.experiment-status",
        RM,
        [
            S("unconfigured", "reward-memory", "experiment-status", *ROUTE),
            S(
                "unknown-goal",
                "reward-memory",
                "experiment-status",
                "--goal-id",
                "no-such-goal",
                "--agent-id",
                "author",
            ),
        ],
        extras=EXPERIMENT_STATUS_EXTRAS,
    ),
    Group(
        "reward.ingest-event",
        RM,
        [
            S("route-unconfigured", *ingest("route.json", *ROUTE)),
            S("route-execute-unconfigured", *ingest("route.json", *ROUTE, "--execute")),
            S("execute-without-route", *ingest("route.json", "--execute")),
            S("raw-comment", *ingest("raw.json", *ROUTE)),
            S("unsupported-top-level", *ingest("extra.json", *ROUTE)),
            S("half-route", *ingest("route.json", "--goal-id", GOAL_ID)),
            # Both refuse the step above for want of a route, so also ask ours directly:
            # LoopX's own observed_at form must not be what ours objects to.
            Step(
                "observed-at-offset-form",
                None,
                ours_words(ingest("route.json", *ROUTE)),
                expect={"field": {"not": ["observed_at"]}},
            ),
        ],
        files={
            "route.json": {
                "adapter": "scoped_feedback",
                "event": SCOPED_EVENT,
                "observed_at": "2026-07-16T00:30:00+00:00",
            },
            "raw.json": {
                "adapter": "scoped_feedback",
                "event": {**SCOPED_EVENT, "raw_comment": "x"},
                "observed_at": "2026-07-16T00:30:00Z",
            },
            "extra.json": {"event": SCOPED_EVENT, "surprise": 1},
        },
    ),
    Group(
        "reward.dogfood-and-operator-control",
        RM,
        [
            S("dogfood-empty", "reward-memory", "dogfood-evaluate", "--input", "{ws}/dogfood.json"),
            S(
                "operator-control-missing",
                "reward-memory",
                "operator-control",
                "--input",
                "{ws}/dogfood.json",
                "--action",
                "retire",
                "--control-ref",
                "control-1",
                "--reasoning-summary",
                "Outdated.",
            ),
        ],
        files={"dogfood.json": {"observations": [], "operator_controls": []}},
        extras=DOGFOOD_EXTRAS,
    ),
    # LoopX 2.1.1 prints no recall packet from its CLI: its own builder makes one
    # (loopx_packet.py, under LoopX's interpreter) and ours must accept it.
    Group(
        "reward.recall-packets",
        RM,
        [
            Step(
                "build",
                ["@python", "{legdir}/loopx_packet.py", "loopx-demo"],
                None,
                compare=False,
                save="packet.json",
            ),
            Step(
                "build-repository-ref",
                ["@python", "{legdir}/loopx_packet.py", "repository:example"],
                None,
                compare=False,
                save="packet-repo.json",
            ),
            *[
                Step(
                    sid,
                    None,
                    [
                        "reward_memory",
                        "recall",
                        "--input",
                        "{ws}/" + name,
                        "--goal-id",
                        "demo",
                        "--agent-id",
                        "author",
                        "--execute",
                    ],
                    expect={
                        "": [0],
                        "schema_version": ["reward_memory_recall_v0"],
                        "status": statuses,
                    },
                )
                # LoopX's `repository:example` form is accepted; the registered corpus is
                # loopx-demo's, so that packet names another project: guard_blocked
                # (project_mismatch) before any provider call, exit 0.
                for sid, name, statuses in (
                    ("recall-loopx-packet", "packet.json", ["completed", "empty"]),
                    ("recall-repository-ref", "packet-repo.json", ["guard_blocked"]),
                )
            ],
        ],
    ),
    # ---- quota and Agent Turn Recall (LoopX's own quota packet fed to both)
    # `quota should-run` is two different documents by design (docs/loopx-hosts.md "The
    # quota packet"): a host keeps LoopX's own for turn gating and hands it to
    # agent_turn_recall (group turn-recall.loopx-packet). Each side is checked on its own:
    # LoopX's prints its scheduler projection, ours its `loopx_quota_decision_v0`.
    Group(
        "quota.should-run",
        QUOTA,
        [
            Step(
                "loopx-should-run",
                QUOTA_LX,
                None,
                compare=False,
            ),
            Step(
                "ours-should-run",
                None,
                ours_words(QUOTA_LX),
                expect={
                    "": [0],
                    "schema_version": ["loopx_quota_decision_v0"],
                    "mode": ["should-run"],
                },
            ),
        ],
    ),
    Group(
        "turn-recall.loopx-packet",
        TURN,
        [
            Step(
                "loopx-quota",
                [*QUOTA_LX, "--turn-instance-id", "turn-44"],
                None,
                compare=False,
                save="loopx-quota.json",
            ),
            S("disabled-preview", *turn("{ws}/loopx-quota.json")),
            S("disabled-execute", *turn("{ws}/loopx-quota.json", "--execute")),
            S("session-ref", *turn("{ws}/loopx-quota.json", "--session-ref", "session-1")),
            S("force-refresh", *turn("{ws}/loopx-quota.json", "--execute", "--force-refresh")),
            S("other-turn", *turn("{ws}/loopx-quota.json", turn_id="turn-99")),
            S("bad-packet", *turn("{ws}/bad.json")),
            S("missing-packet", *turn("{ws}/absent.json")),
            S(
                "unknown-goal",
                "agent-turn-recall",
                "--goal-id",
                "no-such-goal",
                "--agent-id",
                "author",
                "--turn-instance-id",
                "turn-44",
                "--quota-decision-json",
                "{ws}/loopx-quota.json",
            ),
        ],
        files={"bad.json": {"schema_version": "nope"}},
        # the disabled document's `experiment` is experiment-status's document
        extras=[f"experiment.{key}" for key in EXPERIMENT_STATUS_EXTRAS],
    ),
    # ---- what hosts really send (issue 35): refs, operation ids, shared argv, corpus ids
    Group(
        "hosts.receipt-refs",
        RECEIPTS,
        [
            S("pr-artifact", *receipt("--artifact-ref", "owner/repo#126")),
            S("loopback-artifact", *receipt("--artifact-ref", "https://127.0.0.1/x")),
            S("github-form", *receipt("--artifact-ref", "github:owner/repo/pull/7")),
            *[
                S(
                    sid,
                    "semantic-preference",
                    "maintenance-receipt",
                    "--trigger",
                    "explicit_feedback",
                    "--outcome",
                    "verified",
                    "--corpus-id",
                    corpus,
                    "--evidence-ref",
                    evidence,
                )
                for sid, corpus, evidence in (
                    ("evidence-with-slash", "project_preferences", "evidence/run-1/log"),
                    ("evidence-pr-form", "project_preferences", "owner/repo#126"),
                    ("corpus-upper-case", "Prefs", "evidence-1"),
                    ("corpus-dotted", "team.prefs", "evidence-1"),
                    ("corpus-leading-digit", "1prefs", "evidence-1"),
                    ("corpus-dash", "team-prefs", "evidence-1"),
                )
            ],
        ],
    ),
    Group(
        "hosts.operation-ids",
        JOURNAL,
        journal_steps(
            [],
            S("spaces-and-slash", *remember("review.style", "Keep PRs small.", "turn 44/retry")),
            S(
                "apply-spaces-and-slash",
                *remember("review.style", "Keep PRs small.", "turn 44/retry", "{rev}", "--execute"),
                capture=REV,
            ),
            S(
                "non-ascii",
                *remember("review.tone", "Be brief.", "turn-44/第二次", "{rev}"),
            ),
            S(
                "retire-with-statement",
                *retire("review.style", "turn 45/retire", "{rev}", "--statement", "unused"),
            ),
            S("read-with-ignored-flag", *READ, "--statement", "unused"),
        ),
    ),
    Group(
        "hosts.key-order",
        JOURNAL,
        [
            S("read", *READ, capture=REV),
            *[
                S(
                    f"key-{i}",
                    *remember(key, f"Preference {i}.", f"order-{i}", "{rev}", "--execute"),
                    capture=REV,
                )
                for i, key in enumerate(["o.a1", "o.a.b", "o.a-b", "o.a_b", "o.a", "o.a9"])
            ],
            S("read-ordered", *READ),
        ],
    ),
    Group(
        "hosts.extension-upgrade-rollback",
        EXTENSIONS,
        [
            ext("install", "install", "--manifest", "{ws}/extension.toml", "--execute"),
            ext("upgrade-preview", "upgrade", "--manifest", "{ws}/extension-2.toml"),
            ext("upgrade", "upgrade", "--manifest", "{ws}/extension-2.toml", "--execute"),
            ext("rollback-preview", "rollback", "leg-provider"),
            ext("rollback", "rollback", "leg-provider", "--execute"),
            S("recall-after-rollback", *recall("ext.json", "--execute")),
        ],
        files={
            "extension.toml": TOML_MANIFEST,
            "extension-2.toml": TOML_MANIFEST.replace('version = "1.0.0"', 'version = "1.1.0"'),
            "provider.sh": PROVIDER_SH,
            "ext.json": EXT_CONFIG,
        },
    ),
]

# LoopX's own full ingest packet (issue 35), built by LoopX's normalizers and adapter
# (loopx_ingest_packet.py, under LoopX's interpreter) for the demo's registered corpus
# `loopx-demo-pr-description`, fed to both sides without a route: a no-write evaluation.
INGEST_VARIANTS = ("clear", "unverified-actor", "conflicted", "hard-policy")
GROUPS.append(
    Group(
        "reward.loopx-ingest-packet",
        RM,
        [
            *[
                Step(
                    f"build-{variant}",
                    ["@python", "{legdir}/loopx_ingest_packet.py", variant],
                    None,
                    compare=False,
                    save=f"ingest-{variant}.json",
                )
                for variant in INGEST_VARIANTS
            ],
            *[
                S(
                    variant,
                    "reward-memory",
                    "ingest-event",
                    "--input",
                    f"{{ws}}/ingest-{variant}.json",
                )
                for variant in INGEST_VARIANTS
            ],
        ],
        # docs/loopx-hosts.md "Ingest input": our receipt's detail beside LoopX's fields.
        extras=INGEST_RECEIPT_EXTRAS,
    )
)

# Candidate review where the operator has not granted (here: has revoked) the fixture's
# checkpoint `repository:authority-map`: LoopX takes the fixture's word, ours does not.
GROUPS.append(
    Group(
        "reward.candidate-review-ungranted",
        RM,
        [
            setup(
                "revoke-checkpoint",
                us=[
                    "reward_memory",
                    "checkpoint",
                    "revoke",
                    "--checkpoint-id",
                    "repository:authority-map",
                    "--actor",
                    "user:demo-owner",
                    "--reason",
                    "LoopX leg: a database without a granted checkpoint",
                    "--execute",
                ],
            ),
            S("default", "reward-memory", "candidate-review"),
            *[
                S(
                    d,
                    "reward-memory",
                    "candidate-review",
                    "--case",
                    "issue-fix-verified-contributor",
                    "--decision",
                    d,
                )
                for d in ("accept", "no_write")
            ],
        ],
        extras=REVIEW_EXTRAS,
    )
)

# `extension doctor` (issue 35): one id, --all-enabled, before and after --execute, a
# disabled extension and one that is not installed.
GROUPS.append(
    Group(
        "extensions.doctor",
        EXTENSIONS,
        [
            ext("install", "install", "--manifest", "{ws}/extension.toml", "--execute"),
            ext("doctor", "doctor", "leg-provider"),
            ext("doctor-execute", "doctor", "leg-provider", "--execute"),
            ext("doctor-all", "doctor", "--all-enabled"),
            ext("doctor-all-execute", "doctor", "--all-enabled", "--execute"),
            ext("disable", "disable", "leg-provider", "--execute"),
            ext("doctor-disabled", "doctor", "leg-provider", "--execute"),
            ext("doctor-not-installed", "doctor", "no-such-extension"),
        ],
        files={"extension.toml": TOML_MANIFEST, "provider.sh": PROVIDER_SH},
    )
)

# `extension run` (issue 35): LoopX runs standalone extensions only and refuses a
# capability provider; ours refuses after the same checks in the same order.
GROUPS.append(
    Group(
        "extensions.run",
        EXTENSIONS,
        [
            ext("install", "install", "--manifest", "{ws}/extension.toml", "--execute"),
            ext("run", "run", "leg-provider", "--input-json", "{ws}/request.json"),
            ext(
                "run-execute",
                "run",
                "leg-provider",
                "--input-json",
                "{ws}/request.json",
                "--execute",
            ),
            ext(
                "run-not-installed", "run", "no-such-extension", "--input-json", "{ws}/request.json"
            ),
            ext("run-absent-input", "run", "leg-provider", "--input-json", "{ws}/absent.json"),
            ext("run-list-input", "run", "leg-provider", "--input-json", "{ws}/list.json"),
            ext("disable", "disable", "leg-provider", "--execute"),
            ext("run-disabled", "run", "leg-provider", "--input-json", "{ws}/request.json"),
        ],
        files={
            "extension.toml": TOML_MANIFEST,
            "provider.sh": PROVIDER_SH,
            "request.json": {"query": "PR description preferences"},
            "list.json": [1],
        },
    )
)
