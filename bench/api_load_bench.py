"""The API through gunicorn on loopback: single client, closed loop and open loop.

Set-up: Goal ``load`` with one Agent per client and one host token; gunicorn
(``--workers``, default 4) serving ``loopx_site.wsgi``. Only 127.0.0.1 is contacted.
Each phase prints its figures beside the durability settings of the database in use:

- ``single``: one client, sequential GETs of its preferences — p50/p99 (target on SQLite:
  p50 ≤ 4 ms).
- ``closed``: ``--clients`` clients (default 32), each sending its next request when the
  previous one answers; 70% read / 30% remember with the revision last read —
  throughput, p50/p99, status counts (target on PostgreSQL: ≥ 2× 270 req/s, zero 5xx).
- ``open``: requests *arrive* at a fixed ``--rate`` per second for ``--seconds`` whatever
  the server does (same mix), served by a pool of connections; latency is measured from
  the scheduled arrival, so queueing shows up — achieved throughput, p50/p99, 5xx, and
  how many arrivals could not start on time.

Prints one JSON line per phase. Use PostgreSQL for the load figures:

    scripts/with-postgres.sh .venv/bin/python bench/api_load_bench.py
"""

import argparse
import http.client
import json
import os
import queue
import random
import socket
import subprocess
import sys
import threading
import time
from collections import Counter

from _setup import ROOT, django_on_temp_db, durability, percentile


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Client:
    """One keep-alive connection acting for one Agent (read / remember mix)."""

    def __init__(self, port: int, token: str, agent: str, seed: int):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        self.base = f"/api/v1/goals/load/agents/{agent}/preferences/"
        self.rng = random.Random(seed)
        self.revision = None
        self.n = 0
        self.agent = agent

    def call(self, write_share: float) -> str:
        self.n += 1
        if self.rng.random() < write_share:
            body = json.dumps(
                {
                    "key": f"k{self.n % 8}",
                    "statement": f"statement {self.n}",
                    "source_ref": f"r-{self.agent}-{self.n}",
                    "source_quote": "q",
                    "expected_revision": self.revision,
                    "operation_id": f"op-{self.agent}-{self.n}-{self.rng.random()}",
                    "execute": True,
                }
            )
            method, path = "POST", self.base + "remember/"
        else:
            body, method, path = None, "GET", self.base
        try:
            self.conn.request(method, path, body=body, headers=self.headers)
            response = self.conn.getresponse()
            payload = response.read()
        except (OSError, http.client.HTTPException):
            self.conn.close()
            return "error"
        if response.status in (200, 201, 409):
            # Every preference document (read, applied, conflict) carries `current`;
            # its revision is the one the next conditional write must name.
            current = json.loads(payload).get("current") or {}
            self.revision = current.get("revision")
        return str(response.status)


def summary(phase: str, latencies: list[float], statuses: Counter, elapsed: float, **extra):
    ms = [x * 1000 for x in latencies]
    return {
        "bench": "api_load",
        "phase": phase,
        "requests": len(ms),
        "throughput_rps": round(len(ms) / elapsed, 1) if elapsed else None,
        "p50_ms": round(percentile(ms, 0.50), 2) if ms else None,
        "p99_ms": round(percentile(ms, 0.99), 2) if ms else None,
        "statuses": dict(statuses),
        "five_xx": sum(c for s, c in statuses.items() if s.startswith("5") or s == "error"),
        **extra,
    }


def single(port, token, agents, args) -> dict:
    client = Client(port, token, agents[0], 0)
    for _ in range(50):  # warm-up
        client.call(0.0)
    latencies, statuses = [], Counter()
    started = time.perf_counter()
    for _ in range(args.single_requests):
        t = time.perf_counter()
        statuses[client.call(0.0)] += 1
        latencies.append(time.perf_counter() - t)
    return summary("single_client_get", latencies, statuses, time.perf_counter() - started)


def closed(port, token, agents, args) -> dict:
    latencies, statuses, lock = [], Counter(), threading.Lock()
    stop_at = time.monotonic() + args.seconds

    def run(n: int) -> None:
        client = Client(port, token, agents[n], n)
        mine, codes = [], Counter()
        while time.monotonic() < stop_at:
            t = time.perf_counter()
            codes[client.call(0.3)] += 1
            mine.append(time.perf_counter() - t)
        with lock:
            latencies.extend(mine)
            statuses.update(codes)

    started = time.perf_counter()
    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(agents))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return summary(
        "closed_loop", latencies, statuses, time.perf_counter() - started, clients=len(agents)
    )


def open_loop(port, token, agents, args) -> dict:
    arrivals: queue.Queue = queue.Queue()
    latencies, statuses, lock = [], Counter(), threading.Lock()
    late = Counter()

    def run(n: int) -> None:
        client = Client(port, token, agents[n], 1000 + n)
        while True:
            scheduled = arrivals.get()
            if scheduled is None:
                return
            if time.perf_counter() - scheduled > 0.005:
                late["started_over_5ms_late"] += 1
            code = client.call(0.3)
            done = time.perf_counter()
            with lock:
                latencies.append(done - scheduled)  # from the arrival: queueing included
                statuses[code] += 1

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(agents))]
    for t in threads:
        t.start()
    interval = 1.0 / args.rate
    total = int(args.rate * args.seconds)
    started = time.perf_counter()
    for i in range(total):
        scheduled = started + i * interval
        delay = scheduled - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        arrivals.put(scheduled)
    for _ in threads:
        arrivals.put(None)
    for t in threads:
        t.join()
    return summary(
        "open_loop",
        latencies,
        statuses,
        time.perf_counter() - started,
        offered_rps=args.rate,
        connections=len(agents),
        **late,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phases", default="single,closed,open")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=20, help="per load phase")
    parser.add_argument("--rate", type=float, default=300, help="open loop arrivals/s")
    parser.add_argument("--single-requests", type=int, default=1000)
    args = parser.parse_args()
    django_on_temp_db()

    from django.db import connection

    from loopx_site.core import services as core_services

    agents = [f"a{n}" for n in range(args.clients)]
    core_services.register_goal(goal_id="load", agent_ids=agents, state_ref="s")
    token = core_services.create_token(goal_id="load").secret
    settings_in_use = durability()
    connection.close()

    port = free_port()
    env = {
        **os.environ,
        "DEBUG": "false",
        "SECURE_SSL": "false",
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECRET_KEY": "bench-" + "k" * 50,
        "LOG_LEVEL": "WARNING",
        # The load is one token's: measure the API, not its per-credential write budget.
        "LOOPX_THROTTLE_WRITE": "off",
    }
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "loopx_site.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(args.workers),
            "--preload",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    five_xx = 0
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        phases = {"single": single, "closed": closed, "open": open_loop}
        for name in args.phases.split(","):
            result = phases[name](port, token, agents, args)
            result.update(
                durability=settings_in_use,
                gunicorn_workers=args.workers,
                load_average_1m=round(os.getloadavg()[0], 2),
            )
            five_xx += result["five_xx"]
            print(json.dumps(result), flush=True)
    finally:
        server.terminate()
        server.wait(10)
    return 0 if five_xx == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
