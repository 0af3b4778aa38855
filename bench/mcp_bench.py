"""MCP over Streamable HTTP beside the DRF API, through the same gunicorn, in one run.

Set-up: ``make run``'s demo data (``loopx_demo``) on a throwaway database, one token of
Agent ``demo/author``, gunicorn (``--workers``, default 1, preloaded) on loopback. Two
operations, each timed through both doors and alternating call by call (API, MCP, API,
MCP, …) so load on the machine falls on both alike:

- ``read_preferences``: ``GET /api/v1/goals/demo/agents/author/preferences/`` vs the
  ``read_preferences`` tool;
- ``recall_memory``: ``POST /api/v1/reward-memory/recall/`` with ``examples/request.json``
  (a preview: guards and the provider's search, no receipt) vs the ``recall_memory`` tool.

Each MCP call is one self-contained POST of the stateless protocol revision (what the
SDK's client sends after discovery), on a keep-alive connection like the API's. Prints
one JSON line: p50/p95 per door and the ratio MCP ÷ API (target ≤ 1.5, reported in
``met``).
"""

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from _setup import ROOT, django_on_temp_db, durability, percentile

VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_cpu_clock(master_pid: int):
    """A reader of the one gunicorn worker's CPU time in ms (``/proc/…/schedstat``, ns),
    or ``None`` where the kernel offers none: the server's own cost of a call, which a
    loaded machine stretches far less than the wall time the client sees. The worker is
    looked up at the first reading (after the first answered call it surely exists)."""
    children = Path(f"/proc/{master_pid}/task/{master_pid}/children")
    if not children.exists():
        return None
    stat: list[Path] = []

    def read() -> float | None:
        if not stat:
            workers = children.read_text().split()
            if not workers:
                return None
            stat.append(Path(f"/proc/{workers[0]}/schedstat"))
        return int(stat[0].read_text().split()[0]) / 1e6

    return read


class Door:
    """One keep-alive connection; ``call`` returns (milliseconds, parsed body), and
    ``cpu`` holds the server's CPU milliseconds of the last call (when measurable)."""

    def __init__(self, port: int, token: str, clock=None):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.auth = {"Authorization": f"Bearer {token}"}
        self.n = 0
        self.clock = clock
        self.cpu = None

    def _send(self, method: str, path: str, body: dict | None, headers: dict) -> tuple:
        data = json.dumps(body).encode() if body is not None else None
        cpu_before = self.clock() if self.clock else None
        started = time.perf_counter()
        self.conn.request(method, path, body=data, headers={**self.auth, **headers})
        response = self.conn.getresponse()
        payload = response.read()
        elapsed = (time.perf_counter() - started) * 1000
        if cpu_before is not None:
            self.cpu = self.clock() - cpu_before
        if response.status >= 300:
            raise RuntimeError(f"{method} {path}: {response.status} {payload[:200]!r}")
        return elapsed, json.loads(payload)

    def api(self, method: str, path: str, body: dict | None = None) -> tuple:
        return self._send(method, path, body, {"Content-Type": "application/json"})

    def mcp(self, tool: str, arguments: dict) -> tuple:
        self.n += 1
        body = {
            "jsonrpc": "2.0",
            "id": self.n,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments, "_meta": META},
        }
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": VERSION,
            "Mcp-Method": "tools/call",
            "Mcp-Name": tool,
        }
        elapsed, answer = self._send("POST", "/mcp/", body, headers)
        result = answer.get("result") or {}
        if "error" in answer or result.get("isError"):
            raise RuntimeError(f"{tool}: {json.dumps(answer)[:300]}")
        return elapsed, result["structuredContent"]


def figures(times: list[float]) -> dict:
    return {"p50_ms": round(percentile(times, 0.5), 3), "p95_ms": round(percentile(times, 0.95), 3)}


def seed() -> tuple[str, dict]:
    from django.core.management import call_command
    from django.db import connection

    from loopx_site.core import clock
    from loopx_site.core import services as core_services

    with open(os.devnull, "w") as quiet:
        call_command("loopx_demo", stdout=quiet, stderr=quiet)
    token = core_services.create_token(goal_id="demo", agent_id="author").secret
    request = json.loads((ROOT / "examples/request.json").read_text())
    request["freshness"]["observed_at"] = clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    connection.close()
    return token, request


def start(port: int, workers: int) -> subprocess.Popen:
    env = {
        **os.environ,
        "DEBUG": "false",
        "SECURE_SSL": "false",
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECRET_KEY": "bench-" + "k" * 50,
        "LOG_LEVEL": "WARNING",
        # one token's sequential calls: measure the doors, not the per-token budget
        "LOOPX_THROTTLE_REWARD_RECALL": "off",
    }
    argv = [sys.executable, "-m", "gunicorn", "loopx_site.wsgi:application",
            "--bind", f"127.0.0.1:{port}", "--workers", str(workers), "--preload",
            "--log-level", "warning"]  # fmt: skip
    server = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return server
        except OSError:
            time.sleep(0.1)
    server.terminate()
    raise RuntimeError("gunicorn did not start")


def run(door: Door, request: dict, rounds: int) -> dict:
    path = "/api/v1/goals/demo/agents/author/preferences/"
    keys = ("read_api", "read_mcp", "recall_api", "recall_mcp")
    times = {k: [] for k in keys}
    cpu = {k: [] for k in keys}
    calls = (
        lambda: door.api("GET", path),
        lambda: door.mcp("read_preferences", {}),
        lambda: door.api("POST", "/api/v1/reward-memory/recall/", request),
        lambda: door.mcp("recall_memory", {"request": request}),
    )
    for warm in (True, False):
        for _ in range(10 if warm else rounds):
            answers = []
            for key, call in zip(keys, calls, strict=True):
                elapsed, answer = call()
                answers.append(answer)
                if not warm:
                    times[key].append(elapsed)
                    if door.cpu is not None:
                        cpu[key].append(door.cpu)
            if warm:
                assert answers[0] == answers[1], "the two doors answer different documents"
    measured = {key: figures(values) for key, values in times.items()}
    for key, values in cpu.items():
        if values:
            measured[key]["server_cpu_p50_ms"] = round(percentile(values, 0.5), 3)
    return measured


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    django_on_temp_db()
    token, request = seed()
    settings_in_use = durability()
    from django.db import connection

    connection.close()
    port = free_port()
    server = start(port, args.workers)
    try:
        measured = run(Door(port, token, server_cpu_clock(server.pid)), request, args.rounds)
    finally:
        server.terminate()
        server.wait(10)
    ratios = {
        op: round(measured[f"{op}_mcp"]["p50_ms"] / measured[f"{op}_api"]["p50_ms"], 2)
        for op in ("read", "recall")
    }
    ratios_p95 = {
        op: round(measured[f"{op}_mcp"]["p95_ms"] / measured[f"{op}_api"]["p95_ms"], 2)
        for op in ("read", "recall")
    }
    cpu_ratios = {
        op: round(
            measured[f"{op}_mcp"]["server_cpu_p50_ms"] / measured[f"{op}_api"]["server_cpu_p50_ms"],
            2,
        )
        for op in ("read", "recall")
        if "server_cpu_p50_ms" in measured[f"{op}_api"]
    }
    line = {
        "bench": "mcp_http_vs_api",
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "rounds": args.rounds,
        "gunicorn_workers": args.workers,
        **measured,
        "ratio_p50": ratios,
        "ratio_p95": ratios_p95,
        "ratio_server_cpu_p50": cpu_ratios,
        "target": "MCP <= 1.5x API",
        "met": all(r <= 1.5 for r in (*ratios.values(), *ratios_p95.values())),
        "durability": settings_in_use,
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(line), flush=True)
    return 0  # the row reports the target (``met``); a failed call raises


if __name__ == "__main__":
    sys.exit(main())
