"""Soak: a bounded mixed workload against one preference scope from several threads.

Each worker loops: read → remember / correct / retire / replay / stale write, counting
what the service acknowledged. At the end every acknowledged commit must be in the
journal, nothing unacknowledged may be, and revisions must be gap-free. Prints one JSON
line; exits 1 if an invariant fails.

Run: ``.venv/bin/python bench/preferences_soak.py [--operations 10000] [--threads 4]``
(set DATABASE_URL to soak PostgreSQL instead of a throwaway SQLite file).
"""

import argparse
import json
import random
import sys
import threading
import time
from collections import Counter

from _setup import django_on_temp_db, progress_bar


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--operations", type=int, default=10_000)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    tmp = django_on_temp_db()

    from django.db import connection

    from loopx_site.core import services as core_services
    from loopx_site.core.errors import DomainError
    from preferences import services
    from preferences.models import PreferenceOperation

    core_services.register_goal(goal_id="soak", agent_ids=["a"], state_ref="s")
    acknowledged: set[str] = set()
    outcomes: Counter[str] = Counter()
    lock = threading.Lock()
    per_thread = args.operations // args.threads
    keys = [f"k{i}" for i in range(12)]

    def worker(n: int) -> None:
        rng = random.Random(args.seed + n)
        mine: list[tuple[str, dict]] = []
        for i in range(per_thread):
            view = services.read(goal_id="soak", agent_id="a")
            revision = view["revision"] or "none"
            states = {item["key"]: item["state"] for item in view["items"]}
            key = rng.choice(keys)
            choice = rng.random()
            op = f"t{n}-{i}"
            try:
                if choice < 0.1 and mine:
                    kind, kwargs = rng.choice(mine)
                    fn = services.remember if kind == "remember" else services.retire
                    status = fn(**kwargs)["status"]
                elif choice < 0.2:
                    stale = "none" if revision != "none" else "1"
                    status = services.remember(
                        goal_id="soak",
                        agent_id="a",
                        key=key,
                        statement="stale",
                        source_ref=f"src-{op}",
                        source_quote="q",
                        expected_revision=stale,
                        operation_id=op,
                        execute=True,
                    )["status"]
                elif choice < 0.35 and states.get(key) == "active":
                    kwargs = {
                        "goal_id": "soak",
                        "agent_id": "a",
                        "key": key,
                        "source_ref": f"src-{op}",
                        "source_quote": "forget",
                        "expected_revision": revision,
                        "operation_id": op,
                        "execute": True,
                    }
                    status = services.retire(**kwargs)["status"]
                    mine.append(("retire", kwargs))
                else:
                    kwargs = {
                        "goal_id": "soak",
                        "agent_id": "a",
                        "key": key,
                        "statement": f"statement {op}",
                        "source_ref": f"src-{op}",
                        "source_quote": "q",
                        "expected_revision": revision,
                        "operation_id": op,
                        "execute": True,
                    }
                    status = services.remember(**kwargs)["status"]
                    mine.append(("remember", kwargs))
            except DomainError as exc:
                status = exc.code
            with lock:
                outcomes[status] += 1
                bar.update(1)
                if status == "applied":
                    acknowledged.add(op)
        connection.close()

    start = time.perf_counter()
    bar = progress_bar(total=per_thread * args.threads, desc="soak", unit="op")
    threads = [threading.Thread(target=worker, args=(n,)) for n in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bar.close()
    elapsed = time.perf_counter() - start

    journal = list(
        PreferenceOperation.objects.filter(scope__goal_ref="soak")
        .order_by("sequence")
        .values_list("sequence", "operation_id")
    )
    in_journal = {op for _, op in journal}
    gap_free = [s for s, _ in journal] == list(range(1, len(journal) + 1))
    result = {
        "benchmark": "preferences_soak",
        "backend": connection.vendor,
        "operations": sum(outcomes.values()),
        "threads": args.threads,
        "seconds": round(elapsed, 1),
        "outcomes": dict(outcomes),
        "journal_entries": len(journal),
        "acknowledged_missing": len(acknowledged - in_journal),
        "unacknowledged_present": len(in_journal - acknowledged),
        "gap_free": gap_free,
    }
    print(json.dumps(result))
    if tmp is not None:  # the throwaway SQLite database and its WAL files
        connection.close()
        for suffix in ("", "-wal", "-shm"):
            tmp.with_name(tmp.name + suffix).unlink(missing_ok=True)
        tmp.parent.rmdir()
    ok = gap_free and not result["acknowledged_missing"] and not result["unacknowledged_present"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
