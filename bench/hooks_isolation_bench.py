"""Per-invocation cost of process-isolated hooks vs the thread model.

Against a throwaway SQLite database with three installed hooks
(``periodic_report.runtime_trigger`` and the ``synthetic.inert`` / ``synthetic.echo``
hooks), measures, alternating call by call so both share the machine's noise:

* ``invoke``: one ``hooks.isolation.run`` of each provider on its real input (a committed
  receipt's) with the check of its result (``hooks.dispatcher.invoke``), in ``process``
  (a fork per call, pipe, kill/reap off the path), ``worker`` (a kept forked worker per
  hook, pipe) and ``thread`` mode, and the bare provider call (``direct``: no isolation,
  no check);
* ``settle``: ``hooks.services.settle(execute=True)`` of a fresh Todo with the three hooks,
  per mode (what a host sees).

``--ballast-mb`` grows this process first (fork copies page tables, so its cost grows
with the parent). Prints one JSON line: medians, p95s, process/thread ratios, the added
milliseconds and the process's peak RSS.

Usage: .venv/bin/python bench/hooks_isolation_bench.py [--rounds N] [--ballast-mb M]
"""

import argparse
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

HOOKS = [
    "hooks.capabilities.periodic_report.PeriodicReportRuntimeTrigger",
    "hooks.capabilities.synthetic.InertSyntheticHook",
    "hooks.capabilities.synthetic.EchoSyntheticHook",
]
MODES = ("process", "worker", "thread")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--ballast-mb", type=int, default=0)
    args = parser.parse_args()
    os.environ["LOOPX_POST_WRITEBACK_HOOKS"] = ",".join(HOOKS)
    os.environ.setdefault("DEBUG", "false")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    from _setup import django_on_temp_db, percentile

    django_on_temp_db()
    ballast = [bytearray(os.urandom(1 << 20)) for _ in range(args.ballast_mb)]
    result = run(args.rounds, args.warmup, percentile)
    result["ballast_mb"] = len(ballast)
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(result, sort_keys=True))


def run(rounds: int, warmup: int, percentile) -> dict:
    from django.conf import settings
    from hooks_bench import settle_fresh

    from hooks import contracts, dispatcher, isolation, registry
    from hooks.models import DurableWritebackReceipt, HookDispatch
    from loopx_site.core import services as core_services
    from loopx_site.core.canonical import canonical_bytes

    core_services.register_goal(goal_id="bench", agent_ids=["agent"])
    hooks = [h for h in registry.installed().hooks if h.valid]
    assert len(hooks) == 3
    counter = 0

    def settle_one(mode: str) -> float:
        nonlocal counter
        counter += 1
        settings.LOOPX_HOOK_ISOLATION = mode
        elapsed, result = settle_fresh(counter)
        assert all(d["failure_code"] is None for d in result.payload["hook_phase"]["dispatches"])
        return elapsed

    settle_one("process")
    receipt = DurableWritebackReceipt.objects.select_related(
        "settlement__goal", "settlement__agent", "settlement__todo"
    ).first()
    ids = {h.hook_id: dispatcher.dispatch_id_for(receipt, h) for h in hooks}
    inputs = {
        h.hook_id: canonical_bytes(
            contracts.hook_input(
                receipt, h.hook_id, h.capability_id, h.registration, ids[h.hook_id]
            )
        )
        for h in hooks
    }

    def invoke_one(mode: str, hook) -> float:
        """One invocation and the check of its result (``direct``: the provider called in
        this thread, no isolation)."""
        data = inputs[hook.hook_id]
        settings.LOOPX_HOOK_ISOLATION = mode if mode != "direct" else "thread"
        start = time.perf_counter()
        if mode == "direct":
            produced = isolation.produce(hook.provider, data, 65536)
            assert produced.code is None
        else:
            outcome = dispatcher.invoke(hook, ids[hook.hook_id], data)
            assert outcome.failure_code is None, outcome.failure_reason
        return (time.perf_counter() - start) * 1000.0

    order = (*MODES, "direct")
    for _ in range(warmup):
        for mode in MODES:
            settle_one(mode)
        for mode in order:
            for hook in hooks:
                invoke_one(mode, hook)
    invoke = {m: [] for m in order}
    settle = {m: [] for m in MODES}
    for i in range(rounds):
        turn = order if i % 2 == 0 else tuple(reversed(order))
        for hook in hooks:
            for mode in turn:
                invoke[mode].append(invoke_one(mode, hook))
        for mode in MODES if i % 2 == 0 else tuple(reversed(MODES)):
            settle[mode].append(settle_one(mode))
    assert HookDispatch.objects.filter(failure_code__isnull=False).count() == 0

    def stats(values):
        return {
            "median_ms": round(statistics.median(values), 3),
            "p95_ms": round(percentile(values, 0.95), 3),
        }

    inv = {m: stats(v) for m, v in invoke.items()}
    st = {m: stats(v) for m, v in settle.items()}
    result = {
        "bench": "hooks_isolation",
        "database": "sqlite",
        "rounds": rounds,
        "hooks": len(hooks),
        "invoke": inv,
        "settle_three_hooks": st,
    }
    for m in ("process", "worker"):
        for name, figures in (("invoke", inv), ("settle", st)):
            ratio = figures[m]["median_ms"] / figures["thread"]["median_ms"]
            result[f"{name}_ratio_{m}_to_thread"] = round(ratio, 2)
            added = figures[m]["median_ms"] - figures["thread"]["median_ms"]
            result[f"{name}_added_ms_{m}_vs_thread"] = round(added, 3)
    return result


if __name__ == "__main__":
    main()
