"""API under load: gunicorn on loopback, 32 concurrent host clients, mixed read/remember.

Each client owns one Agent of Goal ``load`` and loops: read its preferences (70%) or
remember with the revision it last read (30%). Bounded by request count and time; only
127.0.0.1 is contacted. Prints one JSON line: throughput, p50/p99 latency, status counts
(target: p99 ≤ 100 ms, zero 5xx). Use PostgreSQL for the real figure:

    scripts/with-postgres.sh .venv/bin/python bench/api_load_bench.py
"""

import argparse
import http.client
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
from collections import Counter

from _setup import ROOT, django_on_temp_db


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--requests", type=int, default=100, help="per client")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=120, help="hard time bound")
    args = parser.parse_args()
    django_on_temp_db()

    from django.db import connection

    from loopx_site.core import services as core_services

    agents = [f"a{n}" for n in range(args.clients)]
    core_services.register_goal(goal_id="load", agent_ids=agents, state_ref="s")
    token = core_services.create_token(goal_id="load").secret
    connection.close()

    port = free_port()
    env = {
        **os.environ,
        "DEBUG": "false",
        "SECURE_SSL": "false",
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECRET_KEY": "bench-" + "k" * 50,
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
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        latencies: list[float] = []
        statuses: Counter[str] = Counter()
        lock = threading.Lock()
        stop_at = time.monotonic() + args.seconds
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

        def client(n: int) -> None:
            rng = random.Random(n)
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            base = f"/api/v1/goals/load/agents/{agents[n]}/preferences/"
            revision = None
            mine, codes = [], Counter()
            for i in range(args.requests):
                if time.monotonic() > stop_at:
                    break
                if rng.random() < 0.3:
                    body = json.dumps(
                        {
                            "key": f"k{i % 8}",
                            "statement": f"statement {i}",
                            "source_ref": f"r{n}-{i}",
                            "source_quote": "q",
                            "expected_revision": revision,
                            "operation_id": f"op-{n}-{i}",
                            "execute": True,
                        }
                    )
                    method, path = "POST", base + "remember/"
                else:
                    body, method, path = None, "GET", base
                start = time.perf_counter()
                conn.request(method, path, body=body, headers=headers)
                response = conn.getresponse()
                payload = response.read()
                mine.append(time.perf_counter() - start)
                codes[str(response.status)] += 1
                if response.status in (200, 201):
                    data = json.loads(payload)
                    revision = data.get("revision", data.get("view", {}).get("revision"))
            conn.close()
            with lock:
                latencies.extend(mine)
                statuses.update(codes)

        started = time.perf_counter()
        threads = [threading.Thread(target=client, args=(n,)) for n in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - started
    finally:
        server.terminate()
        server.wait(10)

    latencies.sort()

    def pct(p: float) -> float:
        return round(latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000, 2)

    five_xx = sum(c for s, c in statuses.items() if s.startswith("5"))
    print(
        json.dumps(
            {
                "benchmark": "api_load",
                "backend": connection.vendor,
                "clients": args.clients,
                "gunicorn_workers": args.workers,
                "requests": len(latencies),
                "throughput_rps": round(len(latencies) / elapsed, 1),
                "p50_ms": pct(0.50),
                "p99_ms": pct(0.99),
                "statuses": dict(statuses),
                "five_xx": five_xx,
                "targets": {"p99_ms": 100, "five_xx": 0},
            }
        )
    )
    return 0 if five_xx == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
