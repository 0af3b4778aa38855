"""Added latency of `turn settle --execute` with three post-writeback hooks.

Measures, in one run against a throwaway SQLite database, the in-process latency of
`hooks.services.settle(execute=True)` for fresh Todos with the hook phase disabled
(profile ``hooks_disabled``) and enabled with three installed hooks
(``periodic_report.runtime_trigger`` proposing one intent per settlement, and the inert
``synthetic.inert`` / ``synthetic.echo`` hooks). Modes alternate to share the machine's
noise. Prints one JSON line: medians, p95s, the median ratio and the absolute added
milliseconds (target: added median <= 10 ms).

Usage: .venv/bin/python bench/hooks_bench.py [--rounds N]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HOOKS = [
    "hooks.capabilities.periodic_report.PeriodicReportRuntimeTrigger",
    "hooks.capabilities.synthetic.InertSyntheticHook",
    "hooks.capabilities.synthetic.EchoSyntheticHook",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()

    tmp = tempfile.TemporaryDirectory(prefix="loopx-hooks-bench-")
    db_path = Path(tmp.name) / "bench.sqlite3"
    os.environ["DATABASE_URL"] = f"sqlite:///{db_path}"
    os.environ["DJANGO_SETTINGS_MODULE"] = "loopx_site.settings"
    os.environ["LOOPX_POST_WRITEBACK_HOOKS"] = ",".join(HOOKS)
    os.environ.setdefault("DEBUG", "false")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    try:
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0, interactive=False)
        result = run(args.rounds, args.warmup)
    finally:
        from django.db import connections

        connections.close_all()
        tmp.cleanup()
    print(json.dumps(result, sort_keys=True))


def settle_fresh(n: int, profile: str = "default"):
    """Add Todo ``todo-<n>`` of Goal ``bench`` and settle it: (milliseconds, result)."""
    from hooks import services

    todo_id = f"todo-{n}"
    # Each Todo is its own segment, so completing it makes the periodic report propose.
    services.add_todo(
        goal_id="bench", todo_id=todo_id, title="t", segment_ref=todo_id, execute=True
    )
    start = time.perf_counter()
    result = services.settle(
        goal_id="bench",
        agent_id="agent",
        todo_id=todo_id,
        turn_instance_id=f"turn-{n}",
        event_kind="todo_completed",
        execute=True,
        profile=profile,
    )
    elapsed = time.perf_counter() - start
    assert result.status == "committed"
    return elapsed * 1000.0, result


def run(rounds: int, warmup: int) -> dict:
    from hooks import registry
    from hooks.models import HookDispatch, HookIntent
    from loopx_site.core import services as core_services

    core_services.register_goal(goal_id="bench", agent_ids=["agent"])
    assert len([h for h in registry.installed().hooks if h.valid]) == 3

    counter = 0

    def one(profile: str) -> float:
        nonlocal counter
        counter += 1
        return settle_fresh(counter, profile=profile)[0]

    for _ in range(warmup):
        one("hooks_disabled")
        one("default")
    HookDispatch.objects.all().delete()
    disabled, enabled = [], []
    from loopx_site.core.progress import bar

    for i in bar(range(rounds), desc="settle+hooks", unit="round", fmt="json"):
        order = ("hooks_disabled", "default") if i % 2 == 0 else ("default", "hooks_disabled")
        for profile in order:
            (disabled if profile == "hooks_disabled" else enabled).append(one(profile))

    dispatches = HookDispatch.objects.count()
    assert dispatches == 3 * rounds, dispatches
    assert HookIntent.objects.filter(dispatch__in=HookDispatch.objects.all()).count() == 2 * rounds

    def p95(values):
        return statistics.quantiles(values, n=20)[18]

    med_off, med_on = statistics.median(disabled), statistics.median(enabled)
    added = med_on - med_off
    return {
        "bench": "hooks_settle_three_hooks",
        "database": "sqlite",
        "rounds": rounds,
        "hooks": 3,
        "median_ms_phase_disabled": round(med_off, 3),
        "median_ms_three_hooks": round(med_on, 3),
        "p95_ms_phase_disabled": round(p95(disabled), 3),
        "p95_ms_three_hooks": round(p95(enabled), 3),
        "median_ratio": round(med_on / med_off, 3),
        "added_median_ms": round(added, 3),
        "target_added_median_ms": 10.0,
        "meets_target": added <= 10.0,
    }


if __name__ == "__main__":
    main()
