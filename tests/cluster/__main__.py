"""Run the cluster leg: start the topology, seed it, run every scenario, stop it.

    python -m tests.cluster [--scenario GLOB] [--list] [--scratch DIR]

Needs redis-server, pgbouncer, haproxy and PostgreSQL's server binaries
(``scripts/test-cluster.sh`` installs the Debian packages when it can). Prints one line
per scenario with its figures; exit 0 when every scenario passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

from tests.cluster import scenarios
from tests.cluster.topology import ROOT, Topology, wait_port

TODOS = 600  # settles across every scenario stay below this, however fast the machine


def _scenarios(celery: bool):
    from tests.cluster import background, mcp, metrics

    listed = [
        ("mixed_traffic", scenarios.mixed_traffic),
        ("racing_writers", scenarios.racing_writers),
        ("duplicate_operation_ids", scenarios.duplicate_operation_ids),
        ("duplicate_ingest", scenarios.duplicate_ingest),
        ("duplicate_settle", scenarios.duplicate_settle),
        ("throttles", scenarios.throttles),
        ("mcp_through_haproxy", mcp.mcp_through_haproxy),
        ("metrics_scraped", metrics.metrics_scraped),
    ]
    if celery:
        listed += [
            ("killed_dispatch_replayed", background.killed_dispatch_replayed),
            ("prefork_worker_replays", background.prefork_worker_replays),
            ("instance_and_worker_killed", background.instance_and_worker_killed),
        ]
    else:
        listed += [("instance_killed", background.instance_and_worker_killed)]
    return listed


def has_celery() -> bool:
    return (ROOT / "loopx_site" / "celery.py").exists()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.cluster")
    parser.add_argument("--scenario", action="append", help="only scenarios matching this glob")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--scratch", default=os.environ.get("LOOPX_CLUSTER_SCRATCH"))
    args = parser.parse_args(argv)
    celery = has_celery()
    selected = _scenarios(celery)
    if args.scenario:
        selected = [s for s in selected if any(fnmatch.fnmatchcase(s[0], p) for p in args.scenario)]
    if args.list:
        for name, _ in selected:
            print(name)
        return 0

    scratch = Path(args.scratch or tempfile.mkdtemp(prefix="loopx-cluster."))
    scratch.mkdir(parents=True, exist_ok=True)
    topo = Topology(scratch=scratch, celery=celery)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(130))
    started = time.monotonic()
    failed = []
    try:
        print(f"== cluster leg (scratch {scratch})", flush=True)
        topo.start_postgres()
        topo.start_pgbouncer()
        topo.start_redis()
        migrate = topo.manage("migrate", "--noinput", "-v0")
        if migrate.returncode:
            raise RuntimeError(f"migrate failed: {migrate.stderr[-800:]}")
        seed = topo.python("-m", "tests.cluster.seed", str(TODOS))
        if seed.returncode:
            raise RuntimeError(f"seeding failed: {seed.stderr[-800:]}")
        seeded = json.loads(seed.stdout.strip().splitlines()[-1])
        tokens = seeded["tokens"]
        scenarios.EVENT_TEMPLATE.update(seeded["event"])
        apps = [topo.start_app("app1"), topo.start_app("app2")]
        for app in apps:
            if not wait_port(app.port, 60, app.popen):
                raise RuntimeError(f"{app.name} did not start:\n{app.tail()}")
        topo.start_haproxy()
        if celery:
            topo.start_worker("worker1", pool="prefork")
            topo.start_worker("worker2")  # solo: the process instance_and_worker_killed kills
            topo.start_beat()
        if not topo.wait_backends_up(30):
            raise RuntimeError("HAProxy never saw both app instances healthy")
        print(
            f"   up in {time.monotonic() - started:.0f}s: PostgreSQL :{topo.ports['postgres']}"
            f" ← PgBouncer :{topo.ports['pgbouncer']} (transaction) ← app1 :{topo.ports['app1']}"
            f" + app2 :{topo.ports['app2']} ← HAProxy :{topo.ports['haproxy']}; Redis "
            f":{topo.ports['redis']}"
            + ("; Celery worker1 + worker2 + beat" if celery else "; no Celery app: no workers"),
            flush=True,
        )
        ids = scenarios.Counters(TODOS)
        for name, scenario in selected:
            t0 = time.monotonic()
            try:
                ok, figures = scenario(topo, tokens, ids)
            except Exception as exc:  # a broken scenario fails the leg, the rest still run
                ok, figures = False, {"error": f"{type(exc).__name__}: {exc}"[:400]}
            figures["seconds"] = round(time.monotonic() - t0, 1)
            print(
                f"   {'PASS' if ok else 'FAIL'} {name}: {json.dumps(figures, sort_keys=True)}",
                flush=True,
            )
            if not ok:
                failed.append(name)
        dead = [p.name for p in topo.procs.values() if not p.alive() and p.name not in topo.killed]
        if dead:
            print(f"   FAIL processes died on their own: {', '.join(dead)}", flush=True)
            for name in dead:
                print(f"   --- {name} log tail ---\n{topo.procs[name].tail()}", flush=True)
            failed.append("processes")
    except Exception as exc:
        print(f"   FAIL set-up: {exc}", flush=True)
        failed.append("set-up")
    except (KeyboardInterrupt, SystemExit):
        print("   interrupted: stopping every process by its PID", flush=True)
        raise
    finally:
        topo.stop_all()
    total = time.monotonic() - started
    print(
        f"cluster leg: {len(selected) - len([f for f in failed if f in dict(selected)])}"
        f"/{len(selected)} scenarios passed in {total:.0f}s"
        + (f"; FAILED: {', '.join(failed)}" if failed else ""),
        flush=True,
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
