"""Review aid: turn a run's unlisted differences into draft differences.toml entries.

    python -m tests.loopx_leg --unlisted-json /tmp/unlisted.json …
    python -m tests.loopx_leg.draft_table /tmp/unlisted.json >> draft.toml

Entries are drafted as `open` with the issue-23 bullet of their group (BULLETS); a
person reviews each one, turns seed rules into `deliberate` with their reason, and pastes
them into differences.toml. Paths that differ in every step of a group get step `*`;
every line names an exact path (the table refuses path wildcards).
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

# The issue-23 bullet each group's differences belong to (most specific key wins:
# "group/step", then "group", then the group's prefix before the first dot).
BULLETS = {
    "journal": "Make the differences go away: every one the leg finds (preference journal)",
    "journal.conflicts/foreign-revision": (
        "A revision LoopX issued (file:1:…) or any foreign string as --expected-revision: "
        "LoopX revision_conflict + current"
    ),
    "journal.conflicts/garbage-revision": (
        "A revision LoopX issued (file:1:…) or any foreign string as --expected-revision: "
        "LoopX revision_conflict + current"
    ),
    "journal.history-pages": (
        "history at the end: LoopX keeps next_cursor; a bad cursor: LoopX unavailable"
    ),
    "journal.correct-retire-history": (
        "history at the end: LoopX keeps next_cursor; a bad cursor: LoopX unavailable"
    ),
    "journal.input-edges": (
        "Input rules differ both ways: whitespace-only and 700-emoji statements, "
        "microsecond expires_at are refused by LoopX and accepted here"
    ),
    "journal.capacity": (
        "Input rules differ both ways: the 32 KiB bound is counted on LoopX's "
        "serialisation; item order is LoopX's localeCompare"
    ),
    "journal.api": "Make the differences go away: every one the leg finds (preference API)",
    "recall": "Make the differences go away: every one the leg finds (semantic recall)",
    "recall.context-rules": (
        "Input rules differ both ways: --context pr-number=1, empty values, a repeated key "
        "and 21 entries are accepted by LoopX and refused here"
    ),
    "recall.disabled-and-failures/bad-surface": (
        "Input rules differ both ways: surfaces like Issue_fix.PR are refused by LoopX and "
        "accepted here"
    ),
    "doctor": "Make the differences go away: every one the leg finds (doctor)",
    "receipts": (
        "Receipts add ok and status: built; the seed says a receipt contains only the "
        "surface, application id, outcome, optional artifact ref and ref hashes"
    ),
    "receipts.application/repo-style-id": (
        "Input rules differ both ways: receipts with owner/repo#123 ids or 200-character ids"
    ),
    "receipts.application/long-id": (
        "Input rules differ both ways: receipts with owner/repo#123 ids or 200-character ids"
    ),
    "receipts.application/bad-surface": (
        "Input rules differ both ways: surfaces like Issue_fix.PR are refused by LoopX and "
        "accepted here"
    ),
    "extensions": (
        "Extensions: doctor.{ok,version,entrypoint_identity,probed_entrypoint_identity} and "
        "active_revision missing; re-install unchanged; loopx_extension_error_v0; a config "
        "bound to an uninstalled or disabled extension"
    ),
    "reward.architecture": (
        "Reward Memory: architecture lacks 9 top-level keys and 8 per-class fields"
    ),
    "reward.route-check": "Reward Memory: route-check lacks raw_issue_or_memory_captured",
    "reward.evaluate": (
        "Reward Memory: evaluate differs in recall_status, types and missing metrics"
    ),
    "reward.candidate-review": (
        "candidate-review: LoopX's adapter.shared_candidate, adapter.{…}, record.reasoning, "
        "guard_context, privacy, review, source/scope/confidence layout, candidate:<hex> refs"
    ),
    "reward.experiment-status": (
        "Reward Memory: experiment-status lacks host_coverage and config_runtime_route.goal_source"
    ),
    "reward.ingest-event": (
        "Ingest refuses LoopX's own observed_at form 2026-07-16T00:30:00+00:00; "
        "Make the differences go away (ingest-event)"
    ),
    "reward.dogfood-and-operator-control": (
        "Make the differences go away: every one the leg finds (dogfood-evaluate, operator-control)"
    ),
    "quota": (
        "Turn details from the seeds: config_runtime_route appears in quota should-run; "
        "our should-run document is not LoopX's"
    ),
    "turn-recall": (
        "agent-turn-recall: --session-ref/--force-refresh refused; the disabled document "
        "lacks experiment; errors lack goal_id/agent_id; a bad packet while disabled exits 2; "
        "LoopX's own packets are accepted"
    ),
}


def bullet(group: str, step: str) -> str:
    return (
        BULLETS.get(f"{group}/{step}")
        or BULLETS.get(group)
        or BULLETS.get(group.split(".")[0])
        or "Make the differences go away: every one the leg finds"
    )


def draft(rows) -> dict[str, list[tuple[str, str, str]]]:
    """group → [(step, path, what)]: exact paths (the table takes no path wildcard); a
    (path, what) found in every differing step of a group is drafted once with step `*`."""
    by = collections.defaultdict(lambda: collections.defaultdict(set))
    for r in rows:
        by[r["group"]][r["step"]].add((r["path"] or "<document>", r["what"]))
    out = {}
    for group, steps in by.items():
        sets = list(steps.values())
        common = set.intersection(*sets) if len(sets) > 1 else set()
        lines = [("*", p, w) for p, w in sorted(common)]
        for step, pairs in steps.items():
            lines.extend((step, p, w) for p, w in sorted(pairs - common))
        out[group] = lines
    return out


def main() -> int:
    rows = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    for group, lines in draft(rows).items():
        by_bullet = collections.defaultdict(list)
        for step, path, what in lines:
            by_bullet[bullet(group, step)].append(f"{step}: {path} [{what}]")
        for text, matches in by_bullet.items():
            print("[[difference]]")
            print(f'group = "{group}"')
            print('kind = "open"')
            print(f"bullet = {json.dumps(text, ensure_ascii=False)}")
            print("match = [")
            for m in matches:
                print(f"  {json.dumps(m, ensure_ascii=False)},")
            print("]\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
