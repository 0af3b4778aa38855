"""Side by side with the store users would pick instead: LangGraph's ``SqliteStore``.

Runs in its own virtualenv (``make bench-peers`` creates ``.venv-peers`` with this
project's requirements plus ``langgraph-checkpoint-sqlite``; it is never a runtime
dependency). One process, two SQLite files with the same durability settings (WAL,
``synchronous=NORMAL``, printed), calls alternating one by one:

- read: ``preferences.services.read`` of a scope holding 64 subjects vs
  ``SqliteStore.search(namespace, limit=64)`` over 64 items (target ≤ 1.0×);
- remember: ``preferences.services.remember(execute=True)`` (conditional on the revision
  read, journaled, receipted) vs ``SqliteStore.put`` (an unconditional upsert) of the
  same statement (target ≤ 4×);
- two writers: both read, both write an edit based on what they read. The peer's
  unconditional ``put`` keeps only the last edit; ours commits one and rejects the stale
  writer with ``revision_conflict`` (our side is also a test:
  ``tests/preferences/test_peer_two_writers.py``).

Prints one JSON line.

Usage: make bench-peers   (or .venv-peers/bin/python bench/peer_bench.py [--rounds N])
"""

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _setup import django_on_temp_db, durability

try:
    from langgraph.store.sqlite import SqliteStore
except ImportError:  # pragma: no cover - only in the peers virtualenv
    sys.exit("peer_bench needs langgraph-checkpoint-sqlite: run `make bench-peers`.")

GOAL, AGENT = "peer", "agent"
OWNER = {"source_ref": "owner-message", "source_quote": "As the owner said."}


def peer_store(path: Path) -> tuple[SqliteStore, dict]:
    conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    store = SqliteStore(conn)
    store.setup()
    journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
    sync = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}[
        conn.execute("PRAGMA synchronous").fetchone()[0]
    ]
    return store, {"backend": "sqlite", "journal_mode": journal, "synchronous": sync}


def alternate(ours, theirs, rounds: int) -> dict:
    a, b = [], []
    for i in range(rounds):
        for fn, out in ((ours, a), (theirs, b)) if i % 2 == 0 else ((theirs, b), (ours, a)):
            started = time.perf_counter()
            fn(i)
            out.append((time.perf_counter() - started) * 1e6)
    ours_us, theirs_us = statistics.median(a), statistics.median(b)
    return {
        "ours_median_us": round(ours_us, 1),
        "peer_median_us": round(theirs_us, 1),
        "ratio": round(ours_us / theirs_us, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=500)
    args = parser.parse_args()
    django_on_temp_db()
    from loopx_site.core import services as core_services
    from loopx_site.core.errors import DomainError
    from preferences import services

    core_services.register_goal(goal_id=GOAL, agent_ids=[AGENT, "second"], state_ref="s")
    store, peer_durability = peer_store(Path(tempfile.mkdtemp(prefix="peer-")) / "store.db")
    namespace = ("preferences", GOAL, AGENT)
    revision = {"value": "none"}

    def ours_remember(i: int, key: str | None = None) -> None:
        receipt = services.remember(
            goal_id=GOAL,
            agent_id=AGENT,
            key=key or f"subject.k{i % 64:02d}",
            statement=f"Statement number {i} for this subject.",
            expected_revision=revision["value"],
            operation_id=f"op-{i}-{key}",
            execute=True,
            **OWNER,
        )
        revision["value"] = receipt["state"]["revision"]

    def peer_put(i: int, key: str | None = None) -> None:
        store.put(
            namespace,
            key or f"subject.k{i % 64:02d}",
            {"statement": f"Statement number {i} for this subject.", **OWNER},
            index=False,
        )

    for i in range(64):  # 64 subjects on both sides
        ours_remember(-1 - i, key=f"subject.k{i:02d}")
        peer_put(i, key=f"subject.k{i:02d}")
    assert len(services.read(goal_id=GOAL, agent_id=AGENT)["items"]) == 64
    assert len(store.search(namespace, limit=64)) == 64

    read = alternate(
        lambda i: services.read(goal_id=GOAL, agent_id=AGENT),
        lambda i: store.search(namespace, limit=64),
        args.rounds,
    )
    remember = alternate(ours_remember, peer_put, args.rounds)

    # Two writers, both starting from what they read.
    store.put(("preferences", GOAL, "second"), "review", {"notes": ["base"]}, index=False)
    first = store.get(("preferences", GOAL, "second"), "review").value
    second = store.get(("preferences", GOAL, "second"), "review").value
    store.put(("preferences", GOAL, "second"), "review", {"notes": [*first["notes"], "A"]})
    store.put(("preferences", GOAL, "second"), "review", {"notes": [*second["notes"], "B"]})
    peer_final = store.get(("preferences", GOAL, "second"), "review").value["notes"]

    base = services.remember(
        goal_id=GOAL,
        agent_id="second",
        key="review",
        statement="base",
        expected_revision="none",
        operation_id="two-0",
        execute=True,
        **OWNER,
    )["state"]["revision"]
    seen_a = seen_b = base
    services.remember(
        goal_id=GOAL,
        agent_id="second",
        key="review",
        statement="base + A",
        expected_revision=seen_a,
        operation_id="two-a",
        execute=True,
        **OWNER,
    )
    try:
        services.remember(
            goal_id=GOAL,
            agent_id="second",
            key="review",
            statement="base + B",
            expected_revision=seen_b,
            operation_id="two-b",
            execute=True,
            **OWNER,
        )
        ours_second = "committed"
    except DomainError as exc:
        ours_second = exc.code
    ours_final = [s["statement"] for s in services.read(goal_id=GOAL, agent_id="second")["items"]]

    print(
        json.dumps(
            {
                "bench": "peer_sqlitestore",
                "rounds": args.rounds,
                "durability": {"ours": durability(), "peer": peer_durability},
                "read_64": {**read, "target_ratio": 1.0, "meets": read["ratio"] <= 1.0},
                "remember": {**remember, "target_ratio": 4.0, "meets": remember["ratio"] <= 4.0},
                "two_writers": {
                    "peer_final_notes": peer_final,
                    "peer_lost_an_edit": peer_final != ["base", "A", "B"] and len(peer_final) == 2,
                    "ours_stale_writer": ours_second,
                    "ours_final": ours_final,
                },
            }
        )
    )


if __name__ == "__main__":
    main()
