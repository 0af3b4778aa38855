"""Run the LoopX leg: every scripted group through real LoopX and through our CLI.

    python -m tests.loopx_leg [--group GLOB] [--jobs N] [--dump DIR] [--list]

Needs LOOPX_LEG_BIN (the loopx executable), LOOPX_LEG_NODE_DIR (the folder of a Node ≥
22.22.3 binary) and LOOPX_LEG_SCRATCH (a scratch folder); `scripts/test-loopx.sh`
provides all three. Exit 0 when every difference found is listed in differences.toml,
1 otherwise (or when a group could not run).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.loopx_leg import scenarios, table
from tests.loopx_leg.runner import LoopXSide, OursSide, Workspace, clean_dir, stop_daemons


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.loopx_leg")
    parser.add_argument("--group", action="append", help="only groups matching this glob")
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("LOOPX_LEG_JOBS", "2")))
    parser.add_argument("--dump", help="write every pair of documents under this folder")
    parser.add_argument("--list", action="store_true", help="list the groups and exit")
    parser.add_argument(
        "--from-dump", help="compare the documents of an earlier --dump again (no LoopX run)"
    )
    parser.add_argument("--unlisted-json", help="write the unlisted differences here (review aid)")
    args = parser.parse_args(argv)

    groups = scenarios.GROUPS
    if args.group:
        groups = [g for g in groups if any(fnmatch.fnmatchcase(g.name, p) for p in args.group)]
    if args.list:
        for g in groups:
            print(f"{g.name:45} {g.area:20} {len(g.steps)} steps")
        return 0

    if args.from_dump:
        outcomes = [scenarios.recompare(g, Path(args.from_dump)) for g in groups]
        return report(outcomes, table.load(), 0.0, args.unlisted_json)

    binary = os.environ.get("LOOPX_LEG_BIN")
    node_dir = os.environ.get("LOOPX_LEG_NODE_DIR")
    scratch_env = os.environ.get("LOOPX_LEG_SCRATCH")
    if not (binary and node_dir and scratch_env):
        print(
            "LOOPX_LEG_BIN, LOOPX_LEG_NODE_DIR and LOOPX_LEG_SCRATCH are required "
            "(run `make test-loopx`)",
            file=sys.stderr,
        )
        return 2
    scratch = Path(scratch_env)
    loopx = LoopXSide(binary, node_dir, scratch)
    ours = OursSide(scratch)
    expected = table.load()
    started = time.monotonic()
    try:
        print(f"== building our template database ({len(groups)} groups)", flush=True)
        ours.build_template()

        def run(group):
            root = scratch / "groups" / group.name
            clean_dir(root)
            t0 = time.monotonic()
            outcome = scenarios.run_group(group, loopx, ours, Workspace(root / "ws"), root)
            print(
                f"   ran {group.name} ({len(group.steps)} steps, {time.monotonic() - t0:.0f}s)",
                flush=True,
            )
            return outcome

        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            outcomes = list(pool.map(run, groups))
    finally:
        stopped = stop_daemons(scratch / "tmp")
        if stopped:
            print(
                f"== stopped {len(stopped)} LoopX effect-runtime daemon(s): "
                f"{', '.join(map(str, stopped))}"
            )

    if args.dump:
        dump = Path(args.dump)
        dump.mkdir(parents=True, exist_ok=True)
        for outcome in outcomes:
            (dump / f"{outcome.group.name}.json").write_text(
                json.dumps(outcome.pairs, indent=2, ensure_ascii=False, default=str)
            )
    return report(outcomes, expected, time.monotonic() - started, args.unlisted_json)


def report(outcomes, expected, seconds, unlisted_json=None) -> int:
    unlisted, listed, errors = [], [], []
    per_group = []
    seen_keys = set()
    for outcome in outcomes:
        if outcome.error:
            errors.append(outcome)
        kinds = set()
        for step, diff in outcome.diffs:
            entry = expected.match(outcome.group.name, step, diff)
            if entry is None:
                unlisted.append((outcome.group, step, diff))
            else:
                listed.append((outcome.group, step, diff, entry))
                seen_keys.add(entry.key)
                kinds.add(entry.kind)
            if entry is None:
                kinds.add("unlisted")
        per_group.append((outcome.group, outcome, kinds))

    print("\n== LoopX leg: per group")
    for group, outcome, kinds in per_group:
        if outcome.error:
            verdict = f"ERROR {outcome.error}"
        elif not outcome.diffs:
            verdict = "identical"
        else:
            verdict = "differs (" + ", ".join(sorted(kinds)) + f"; {len(outcome.diffs)} paths)"
        print(f"  {group.name:45} {verdict}")

    if listed:
        print("\n== listed differences found (differences.toml)")
        for group, step, diff, entry in listed:
            print(f"  [{entry.kind}] {group.name}/{step}: {diff.render()}")
    if unlisted:
        print("\n== UNLISTED differences (add to differences.toml after review, or fix)")
        for group, step, diff in unlisted:
            print(f"  {group.name}/{step}: {diff.render()}")
            print(f"      toml: {table.suggest(group.name, step, diff)}")
    if unlisted_json:
        Path(unlisted_json).write_text(
            json.dumps(
                [
                    {
                        "group": g.name,
                        "area": g.area,
                        "step": s,
                        "path": d.path,
                        "what": d.kind,
                        "loopx": repr(d.loopx)[:200],
                        "ours": repr(d.ours)[:200],
                    }
                    for g, s, d in unlisted
                ],
                indent=1,
            )
        )
    ran = [g.name for g, _o, _k in per_group]
    stale = [
        e
        for e in expected.entries
        if e.key not in seen_keys and any(table._glob(e.group, name) for name in ran)
    ]
    if stale:
        print("\n== listed but not seen this run (fixed? remove from differences.toml)")
        for e in stale:
            print(f"  [{e.kind}] {e.group}: {e.step}: {e.path} [{e.what}]")

    n = len(per_group)
    identical = sum(1 for _, o, _k in per_group if not o.diffs and not o.error)
    differing = [k for _, o, k in per_group if o.diffs]
    only_deliberate = sum(1 for k in differing if k == {"deliberate"})
    with_open = sum(1 for k in differing if "open" in k and "unlisted" not in k)
    with_unlisted = sum(1 for k in differing if "unlisted" in k)
    print(
        f"\n== summary: {n} groups compared, {identical} identical, {len(differing)} differing "
        f"({only_deliberate} deliberate only, {with_open} with open, {with_unlisted} with "
        f"unlisted); {len(listed)} listed paths (deliberate "
        f"{sum(1 for *_r, e in listed if e.kind == 'deliberate')}, open "
        f"{sum(1 for *_r, e in listed if e.kind == 'open')}), {len(unlisted)} unlisted, "
        f"{len(errors)} group errors; {seconds:.0f}s"
    )
    return 1 if unlisted or errors else 0


if __name__ == "__main__":
    sys.exit(main())
