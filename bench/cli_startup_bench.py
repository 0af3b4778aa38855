"""CLI start-up: wall time of ``manage.py semantic_preference agent read`` against
``python -c "import django"``, run by run, alternating.

Each round runs, in turn: the CLI read on this tree, the bare ``import django``, and —
with ``--compare-rev REV`` — the same CLI read on a ``git archive`` export of REV (e.g.
the pre-change commit), each on its own migrated SQLite database holding one Goal/Agent.
Prints one JSON line: medians (wall and child CPU time), the CLI ÷ ``import django``
ratio for each tree and, with a comparison, this tree's median ÷ REV's (target ≤ 0.5).

The ratios are medians of per-round pairs: each CLI run is divided by the ``import
django`` run right after it, so a burst of load on a shared machine inflates both halves
of a pair rather than one side of the whole comparison. ``--check`` holds the CPU ratio
(user + system time of the child, which other processes disturb far less than the wall
clock) at or under the target.

Children run with bytecode caching on (``PYTHONDONTWRITEBYTECODE`` is dropped from their
environment; the warm-up rounds write the caches), as Python runs by default: with it set
and no caches on disk, every start compiles every module from source (2-3 times the
work) and the measure says more about the compiler than about what a command imports.

Usage: .venv/bin/python bench/cli_startup_bench.py [--rounds N] [--compare-rev REV] [--check]
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
#: Issue 37: the CLI read starts in at most 10x a bare ``import django`` (wall, and CPU
#: time, which a loaded machine disturbs less).
TARGET_RATIO_TO_IMPORT_DJANGO = 10.0


def prepare(tree: Path, workdir: Path, name: str) -> dict:
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{workdir / (name + '.sqlite3')}",
        "DJANGO_SETTINGS_MODULE": "loopx_site.settings",
        "DEBUG": "false",
    }
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    manage = [PYTHON, str(tree / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, check=True, cwd=tree)
    subprocess.run(
        [
            *manage,
            "shell",
            "-c",
            "from loopx_site.core import services as s; "
            "s.register_goal(goal_id='bench', agent_ids=['agent'])",
        ],
        env=env,
        check=True,
        cwd=tree,
        stdout=subprocess.DEVNULL,
    )
    return {"env": env, "cwd": tree}


def timed(argv: list[str], env: dict, cwd: Path) -> tuple[float, float]:
    """(wall ms, CPU ms of the child: user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"command failed ({done.returncode}): {argv[2:4]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed * 1000, cpu * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--compare-rev", help="git revision to compare against")
    parser.add_argument(
        "--check",
        action="store_true",
        help=f"exit 1 when this tree's CPU ratio is over {TARGET_RATIO_TO_IMPORT_DJANGO:g}x",
    )
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="loopx-cli-bench-"))
    try:
        trees = {"this": prepare(ROOT, workdir, "this")}
        if args.compare_rev:
            export = workdir / "rev"
            export.mkdir()
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", args.compare_rev],
                check=True,
                stdout=subprocess.PIPE,
            ).stdout
            subprocess.run(["tar", "-x", "-C", str(export)], input=archive, check=True)
            (export / ".local").mkdir(exist_ok=True)
            trees["rev"] = prepare(export, workdir, "rev")
        read = ["semantic_preference", "agent", "read", "--goal-id", "bench", "--agent-id", "agent"]
        times: dict[str, list[tuple[float, float]]] = {n: [] for n in [*trees, "import_django"]}
        base_env = trees["this"]["env"]
        for _ in range(2):  # warm the file cache and write the bytecode caches
            timed([PYTHON, "-c", "import django"], base_env, ROOT)
            for tree in trees.values():
                timed([PYTHON, str(tree["cwd"] / "manage.py"), *read], tree["env"], tree["cwd"])
        pairs: dict[str, list[tuple[float, float]]] = {n: [] for n in trees}
        for _ in range(args.rounds):
            for name, tree in trees.items():
                manage = str(tree["cwd"] / "manage.py")
                cli = timed([PYTHON, manage, *read], tree["env"], tree["cwd"])
                bare = timed([PYTHON, "-c", "import django"], base_env, ROOT)
                times[name].append(cli)
                times["import_django"].append(bare)
                pairs[name].append((cli[0] / bare[0], cli[1] / max(bare[1], 0.001)))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    medians = {name: round(statistics.median(v[0] for v in vs), 1) for name, vs in times.items()}
    cpu = {name: round(statistics.median(v[1] for v in vs), 1) for name, vs in times.items()}
    line = {
        "bench": "cli_startup",
        "command": "manage.py " + " ".join(read[:3]),
        "rounds": args.rounds,
        "median_wall_ms": medians,
        "median_cpu_ms": cpu,
        "ratio_to_import_django": {
            name: round(statistics.median(p[0] for p in pairs[name]), 2) for name in trees
        },
        "cpu_ratio_to_import_django": {
            name: round(statistics.median(p[1] for p in pairs[name]), 2) for name in trees
        },
        "target_ratio_to_import_django": TARGET_RATIO_TO_IMPORT_DJANGO,
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    line["meets_ratio_target"] = (
        line["cpu_ratio_to_import_django"]["this"] <= TARGET_RATIO_TO_IMPORT_DJANGO
    )
    if "rev" in trees:
        line["compare_rev"] = args.compare_rev
        line["this_over_rev"] = round(medians["this"] / medians["rev"], 3)
        line["this_over_rev_cpu"] = round(cpu["this"] / cpu["rev"], 3)
        line["target_this_over_rev"] = 0.5
        line["meets_target"] = line["this_over_rev"] <= 0.5
    print(json.dumps(line))
    if args.check and not line["meets_ratio_target"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
