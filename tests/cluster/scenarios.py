"""The cluster leg's scenarios: each bounded in count and time, each returns its figures.

A scenario gets the running ``Topology`` and the seeded tokens; it returns ``(ok,
figures)`` where ``figures`` is a flat dict printed on the scenario's one line.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from tests.cluster.client import Answer, Client

PREFS = "/api/v1/goals/{goal}/agents/{agent}/preferences/"
INGEST = "/api/v1/reward-memory/ingest/"
SETTLE = "/api/v1/turns/settle/"
DOCTOR = "/api/v1/semantic-preferences/doctor/"


class Counters:
    """Todo, event and traffic-run ids handed out once across scenarios."""

    def __init__(self, todos: int):
        self.todos = iter(range(todos))
        self.events = iter(range(10**6))
        self.runs = iter(range(1, 10**6))
        self.lock = threading.Lock()

    def todo(self) -> str:
        with self.lock:
            return f"cl-{next(self.todos)}"

    def event(self) -> str:
        with self.lock:
            return f"cl-ev-{next(self.events)}"

    def run(self) -> int:
        with self.lock:
            return next(self.runs)


#: The demo's turn-admission event (``reward_memory.demo``), printed by the seed.
EVENT_TEMPLATE: dict = {}


def ingest_body(event_id: str) -> dict:
    """A soft-preference event the demo's standing policy admits (turn-admission corpus):
    the demo's own event shape with this event id, evidence and summary."""
    event = json.loads(json.dumps(EVENT_TEMPLATE))
    event["event_id"] = event_id
    event["source"]["evidence_ref"] = f"feedback:loopx-demo/turn-admission/{event_id}"
    event["content_summary"] = f"Cluster leg preference {event_id}: re-read the Todo first."
    return {"goal_id": "demo", "agent_id": "author", "execute": True, "event": event}


def settle_body(todo_id: str, turn: str) -> dict:
    return {
        "goal_id": "demo",
        "agent_id": "author",
        "todo_id": todo_id,
        "turn_instance_id": turn,
        "event_kind": "todo_completed",
        "execute": True,
    }


def remember_body(key: str, n: str, revision, op: str) -> dict:
    return {
        "key": key,
        "statement": f"Cluster statement {n}.",
        "source_ref": f"cluster-source-{n}",
        "source_quote": "q",
        "expected_revision": revision,
        "operation_id": op,
        "execute": True,
    }


def revision_of(body: dict):
    """The opaque revision a preference document (read, receipt, conflict) carries."""
    return (body.get("current") or {}).get("revision")


def race(calls: list[tuple[Client, str, dict]]) -> list[Answer]:
    """Send every call at once (a barrier releases them together)."""
    barrier = threading.Barrier(len(calls))

    def one(item):
        client, path, body = item
        barrier.wait(10)
        return client.post(path, body)

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(one, calls))


def direct_clients(topo, token: str, n: int) -> list[Client]:
    """``n`` clients alternating between the two app instances (no HAProxy)."""
    names = ("app1", "app2")
    return [Client(topo.ports[names[i % 2]], token, names[i % 2]) for i in range(n)]


def count(topo, sql: str) -> int:
    return int(topo.psql(sql, db="loopx") or 0)


# -- traffic shared by the mixed and the kill scenarios --------------------------------
class Traffic:
    """Host traffic through HAProxy: reads, conditional remembers, ingests, settles.

    A write is *acknowledged* when it got a 2xx; an unanswered write (no HTTP answer or a
    5xx) is retried with the same idempotency key (operation id, event id, turn) — a
    host's normal behaviour. ``acked`` keeps every acknowledged write for the readback.
    """

    def __init__(self, topo, tokens, ids: Counters):
        self.topo, self.tokens, self.ids = topo, tokens, ids
        self.run_id = ids.run()  # operation ids unique across runs of the same Agents
        self.statuses: Counter = Counter()
        self.served: Counter = Counter()
        self.acked = {"remember": [], "ingest": [], "settle": []}
        self.lock = threading.Lock()
        self.errors_after: list[tuple[float, int]] = []

    def _send(self, client, path, body, retries=3) -> Answer:
        answer = client.post(path, body) if body is not None else client.get(path)
        tries = 0
        while (answer.status == 0 or answer.status >= 500) and tries < retries:
            with self.lock:
                self.errors_after.append((time.monotonic(), answer.status))
                self.statuses[f"unanswered_{answer.status or 'conn'}"] += 1
            tries += 1
            time.sleep(0.3)
            answer = client.post(path, body) if body is not None else client.get(path)
        with self.lock:
            self.statuses[str(answer.status)] += 1
            if answer.served_by:
                self.served[answer.served_by] += 1
        return answer

    def run_client(self, n: int, requests: int, stop_at: float) -> None:
        port = self.topo.ports["haproxy"]
        prefs = Client(port, self.tokens["cluster"])
        author = Client(port, self.tokens["author"])
        agent = f"c{n}"
        base = PREFS.format(goal="cluster", agent=agent)
        revision = None
        for i in range(requests):
            if time.monotonic() > stop_at:
                break
            kind = ("read", "remember", "read", "remember", "ingest", "read", "remember", "settle")[
                i % 8
            ]
            if kind == "read":
                answer = self._send(prefs, base, None)
                if answer.ok:
                    revision = revision_of(answer.body)
            elif kind == "remember":
                op = f"op-{self.run_id}-{agent}-{i}"
                body = remember_body(f"k{i % 6}", f"{self.run_id}-{agent}-{i}", revision, op)
                answer = self._send(prefs, base + "remember/", body)
                if answer.ok:
                    revision = revision_of(answer.body)
                    with self.lock:
                        self.acked["remember"].append((agent, op, revision))
                elif answer.status == 409:  # another client of this Agent went first
                    revision = revision_of(answer.body)
            elif kind == "ingest":
                event_id = self.ids.event()
                answer = self._send(author, INGEST, ingest_body(event_id))
                if answer.ok:
                    with self.lock:
                        self.acked["ingest"].append((event_id, answer.body.get("receipt_id")))
            else:
                todo = self.ids.todo()
                answer = self._send(author, SETTLE, settle_body(todo, f"turn-{todo}"))
                if answer.ok:
                    receipt = (answer.body.get("receipt") or {}).get("receipt_id")
                    with self.lock:
                        self.acked["settle"].append((f"turn-{todo}", receipt))
        prefs.close()
        author.close()

    def run(self, clients: int, requests: int, seconds: float) -> None:
        stop_at = time.monotonic() + seconds
        threads = [
            threading.Thread(target=self.run_client, args=(n, requests, stop_at))
            for n in range(clients)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def readback(self) -> dict:
        """Every acknowledged write, read back (preferences through the API, the rest in
        the database). Returns the counts of what is missing."""
        port = self.topo.ports["haproxy"]
        prefs = Client(port, self.tokens["cluster"])
        missing = Counter({"remember": 0, "ingest": 0, "settle": 0})
        by_agent: dict[str, dict[str, str]] = {}
        for agent, op, revision in self.acked["remember"]:
            if agent not in by_agent:
                by_agent[agent] = history(prefs, agent)
            if by_agent[agent].get(op) != revision:
                missing["remember"] += 1
        for event_id, receipt in self.acked["ingest"]:
            again = prefs_client_ingest(self.topo, self.tokens, event_id)
            if not again.ok or again.body.get("receipt_id") != receipt:
                missing["ingest"] += 1
        turns = {t for t, _ in self.acked["settle"]}
        if turns:
            listed = "','".join(sorted(turns))
            found = count(
                self.topo,
                "SELECT count(*) FROM hooks_durablewritebackreceipt r JOIN "
                "hooks_turnsettlement s ON r.settlement_id = s.id WHERE r.state = 'committed' "
                f"AND s.turn_instance_id IN ('{listed}')",
            )
            missing["settle"] += len(turns) - found
        prefs.close()
        return missing


def prefs_client_ingest(topo, tokens, event_id: str) -> Answer:
    """The same event again: a replay returns the acknowledged receipt."""
    return Client(topo.ports["haproxy"], tokens["author"]).post(INGEST, ingest_body(event_id))


def history(client: Client, agent: str) -> dict[str, str]:
    """operation id → resulting revision of an Agent's whole journal."""
    found, cursor = {}, None
    base = PREFS.format(goal="cluster", agent=agent) + "history/?limit=200"
    for _ in range(50):
        answer = client.get(base + (f"&after_cursor={cursor}" if cursor else ""))
        if not answer.ok:
            break
        for entry in answer.body.get("events", []):
            found[entry["operation_id"]] = entry["revision"]
        cursor = answer.body.get("next_cursor")
        if not cursor:
            break
    return found


def hook_failures(topo, turns) -> dict[str, int]:
    """Failure code → how many hook dispatches of these Turn instances failed. The hooks
    run in forked hook workers (``LOOPX_HOOK_ISOLATION=worker``, the default) of the
    gunicorn worker that settled, or of the Celery worker that recovered the receipt."""
    if not turns:
        return {}
    listed = "','".join(sorted(turns))
    out = topo.psql(
        "SELECT d.failure_code, count(*) FROM hooks_hookdispatch d JOIN "
        "hooks_durablewritebackreceipt r ON d.receipt_id = r.id JOIN hooks_turnsettlement s "
        f"ON r.settlement_id = s.id WHERE s.turn_instance_id IN ('{listed}') AND "
        "d.status = 'failed' GROUP BY d.failure_code",
        db="loopx",
    )
    return {code: int(n) for code, n in (line.split("|") for line in out.splitlines() if line)}


def five_xx(statuses: Counter) -> int:
    return sum(c for s, c in statuses.items() if s.startswith(("5", "unanswered")))


# -- the scenarios -----------------------------------------------------------------------
def mixed_traffic(topo, tokens, ids):
    traffic = Traffic(topo, tokens, ids)
    started = time.monotonic()
    traffic.run(clients=6, requests=48, seconds=60)
    missing = traffic.readback()
    failed_hooks = hook_failures(topo, {turn for turn, _ in traffic.acked["settle"]})
    acked = {k: len(v) for k, v in traffic.acked.items()}
    bad = five_xx(traffic.statuses) + sum(missing.values()) + sum(failed_hooks.values())
    both = len(traffic.served) == 2
    return bad == 0 and both and all(acked.values()), {
        "requests": sum(v for k, v in traffic.statuses.items() if not k.startswith("un")),
        "five_xx": five_xx(traffic.statuses),
        "acked": acked,
        "missing": dict(missing),
        "hook_failures": failed_hooks,
        "served_by": dict(traffic.served),
        "statuses": dict(traffic.statuses),
        "seconds": round(time.monotonic() - started, 1),
    }


def racing_writers(topo, tokens, ids, rounds=3, writers=8):
    clients = direct_clients(topo, tokens["cluster"], writers)
    agent = "c12"
    base = PREFS.format(goal="cluster", agent=agent)
    outcomes = Counter()
    ok = True
    for r in range(rounds):
        revision = revision_of(clients[0].get(base).body)
        answers = race(
            [
                (
                    c,
                    base + "remember/",
                    remember_body(f"race{i}", f"r{r}-{i}", revision, f"race-{r}-{i}"),
                )
                for i, c in enumerate(clients)
            ]
        )
        committed = [a for a in answers if a.ok]
        conflicts = [a for a in answers if a.status == 409 and a.code == "revision_conflict"]
        outcomes["committed"] += len(committed)
        outcomes["revision_conflict"] += len(conflicts)
        outcomes["instances"] = len({a.served_by for a in answers})
        ok &= len(committed) == 1 and len(conflicts) == writers - 1
    ok &= outcomes["instances"] == 2
    return ok, {"rounds": rounds, "writers": writers, **outcomes}


def duplicate_operation_ids(topo, tokens, ids, writers=8):
    clients = direct_clients(topo, tokens["cluster"], writers)
    agent = "c13"
    base = PREFS.format(goal="cluster", agent=agent)
    revision = revision_of(clients[0].get(base).body)
    body = remember_body("dup", "dup-0", revision, "dup-op-0")
    answers = race([(c, base + "remember/", body) for c in clients])
    statuses = Counter(a.body.get("status") if a.ok else str(a.status) for a in answers)
    rows = count(
        topo, "SELECT count(*) FROM preferences_preferenceoperation WHERE operation_id = 'dup-op-0'"
    )
    ok = rows == 1 and statuses.get("applied") == 1 and statuses.get("replayed") == writers - 1
    return ok, {"writers": writers, "rows": rows, **statuses}


def duplicate_ingest(topo, tokens, ids, writers=6):
    clients = direct_clients(topo, tokens["author"], writers)
    before = count(topo, "SELECT count(*) FROM reward_memory_ingestevent")
    event_id = ids.event()
    answers = race([(c, INGEST, ingest_body(event_id)) for c in clients])
    rows = count(topo, "SELECT count(*) FROM reward_memory_ingestevent") - before
    receipts = {a.body.get("receipt_id") for a in answers if a.ok}
    ok = rows == 1 and len(receipts) == 1 and all(a.ok for a in answers)
    return ok, {
        "writers": writers,
        "rows": rows,
        "receipt_ids": len(receipts),
        "statuses": dict(Counter(a.status for a in answers)),
    }


def duplicate_settle(topo, tokens, ids, writers=6):
    clients = direct_clients(topo, tokens["author"], writers)
    todo = ids.todo()
    turn = f"turn-race-{todo}"
    answers = race([(c, SETTLE, settle_body(todo, turn)) for c in clients])
    settlements = count(
        topo, f"SELECT count(*) FROM hooks_turnsettlement WHERE turn_instance_id = '{turn}'"
    )
    receipts = {(a.body.get("receipt") or {}).get("receipt_id") for a in answers if a.ok}
    dispatch_sets = {
        tuple(sorted(d["dispatch_id"] for d in a.body.get("hook_phase", {}).get("dispatches", [])))
        for a in answers
        if a.ok
    }
    dispatch_rows = count(
        topo,
        "SELECT count(*) FROM hooks_hookdispatch d JOIN hooks_durablewritebackreceipt r ON "
        "d.receipt_id = r.id JOIN hooks_turnsettlement s ON r.settlement_id = s.id "
        f"WHERE s.turn_instance_id = '{turn}'",
    )
    ok = settlements == 1 and len(receipts) == 1 and len(dispatch_sets) == 1
    ok &= all(a.ok for a in answers) and dispatch_rows == len(next(iter(dispatch_sets), ()))
    return ok, {
        "writers": writers,
        "settlements": settlements,
        "receipt_ids": len(receipts),
        "dispatch_rows": dispatch_rows,
        "statuses": dict(Counter(a.status for a in answers)),
    }


def throttles(topo, tokens, ids, requests=30, limit=12):
    """``requests`` doctor calls of one token through HAProxy (round robin: both
    instances) → exactly ``limit`` admitted (the configured 12/min), the rest 429."""
    clients = [Client(topo.ports["haproxy"], tokens["throttle"]) for _ in range(6)]
    per = requests // len(clients)

    def run(client):
        return [client.post(DOCTOR, {}) for _ in range(per)]

    with ThreadPoolExecutor(len(clients)) as pool:
        answers = [a for batch in pool.map(run, clients) for a in batch]
    refused = sum(1 for a in answers if a.status == 429 and a.code == "throttled")
    admitted = sum(1 for a in answers if a.status not in (429,) and 0 < a.status < 500)
    served = Counter(a.served_by for a in answers)
    ok = admitted == limit and refused == requests - limit and len(served) == 2
    return ok, {
        "requests": len(answers),
        "admitted": admitted,
        "throttled": refused,
        "configured": f"{limit}/min",
        "served_by": dict(served),
        "five_xx": sum(1 for a in answers if a.status >= 500 or a.status == 0),
    }
