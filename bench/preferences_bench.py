"""Explicit preference journal benchmarks (quality.md), one JSON line on stdout.

* read of a 64-key scope: median latency ÷ a raw ``sqlite3`` SELECT of the same rows
  (target ≤ 4×);
* remember commits/s ÷ a raw SQL insert+update transaction baseline (target ≥ 0.25);
* history page latency at journal size 100 vs 10,000 (target ratio ≤ 1.5).

Run: ``.venv/bin/python bench/preferences_bench.py [--rounds N]``.
"""

import argparse
import json
import statistics
import time

from _setup import django_on_temp_db


def median_seconds(fn, rounds):
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args()
    django_on_temp_db()

    from django.db import connection

    from loopx_site.core import services as core_services
    from preferences import services

    core_services.register_goal(goal_id="bench", agent_ids=["a", "b", "c"], state_ref="s")

    def fill(agent, n, keys=64):
        for i in range(n):
            services.remember(
                goal_id="bench",
                agent_id=agent,
                key=f"k{i % keys:02d}",
                statement=f"s{i}",
                source_ref=f"r{i}",
                source_quote="q",
                expected_revision=str(i) if i else "none",
                operation_id=f"op-{i}",
                execute=True,
            )

    fill("a", 64)
    read = median_seconds(lambda: services.read(goal_id="bench", agent_id="a"), args.rounds)

    # Baselines use the same database through its raw DB-API connection (no ORM).
    raw = connection.connection
    mark = "?" if connection.vendor == "sqlite" else "%s"
    sql = (
        "SELECT s.key, s.state, s.statement, s.revision, o.operation_id, s.source_ref, "
        "s.expires_at, s.updated_at FROM preferences_preferencesubject s "
        "JOIN preferences_preferenceoperation o ON o.id = s.operation_id "
        "JOIN preferences_preferencescope sc ON sc.id = s.scope_id "
        f"WHERE sc.scope_key = {mark} ORDER BY s.key"
    )
    with connection.cursor() as c:
        c.execute("SELECT scope_key FROM preferences_preferencescope WHERE agent_ref='a'")
        scope_key = c.fetchone()[0]

    def raw_select():
        cur = raw.cursor()
        cur.execute(sql, (scope_key,))
        cur.fetchall()

    raw_read = median_seconds(raw_select, args.rounds)

    # commit throughput: service vs a raw conditional insert+update transaction
    n_commits = 200
    start = time.perf_counter()
    fill("b", n_commits, keys=32)
    service_rate = n_commits / (time.perf_counter() - start)
    with connection.cursor() as c:
        c.execute(
            "CREATE TABLE bench_journal (id INTEGER PRIMARY KEY, scope INT, rev INT, "
            "body TEXT, UNIQUE(scope, rev))"
        )
        c.execute("CREATE TABLE bench_scope (id INTEGER PRIMARY KEY, rev INT)")
        c.execute("INSERT INTO bench_scope VALUES (1, 0)")
    begin = "BEGIN IMMEDIATE" if connection.vendor == "sqlite" else "BEGIN"
    lock = "" if connection.vendor == "sqlite" else " FOR UPDATE"
    cur = raw.cursor()
    start = time.perf_counter()
    for i in range(n_commits):
        cur.execute(begin)
        cur.execute(f"SELECT rev FROM bench_scope WHERE id = 1{lock}")
        cur.execute(
            f"INSERT INTO bench_journal (id, scope, rev, body) VALUES ({mark}, 1, {mark}, {mark})",
            (i + 1, i + 1, "s"),
        )
        cur.execute(
            f"UPDATE bench_scope SET rev = {mark} WHERE id = 1 AND rev = {mark}", (i + 1, i)
        )
        cur.execute("COMMIT")
    raw_rate = n_commits / (time.perf_counter() - start)

    # history pages: journal of 100 vs 10,000 (last page via cursor)
    fill("c", 10_000)
    if connection.vendor == "postgresql":  # planner statistics, as autovacuum would keep
        with connection.cursor() as c:
            c.execute("ANALYZE")
    page_small = median_seconds(
        lambda: services.history(goal_id="bench", agent_id="b", limit=50), 50
    )
    cursor = None
    for _ in range(5):  # walk a few pages in to a deep cursor
        cursor = services.history(goal_id="bench", agent_id="c", after_cursor=cursor, limit=200)[
            "next_cursor"
        ]
    page_large = median_seconds(
        lambda: services.history(goal_id="bench", agent_id="c", after_cursor=cursor, limit=50), 50
    )

    print(
        json.dumps(
            {
                "benchmark": "preferences",
                "backend": connection.vendor,
                "read_64_keys_median_ms": round(read * 1000, 3),
                "raw_select_median_ms": round(raw_read * 1000, 3),
                "read_ratio": round(read / raw_read, 2),
                "read_ratio_target": "<= 4",
                "remember_commits_per_s": round(service_rate, 1),
                "raw_transaction_commits_per_s": round(raw_rate, 1),
                "commit_ratio": round(service_rate / raw_rate, 3),
                "commit_ratio_target": ">= 0.25",
                "history_page_ms_at_200": round(page_small * 1000, 3),
                "history_page_ms_at_10000": round(page_large * 1000, 3),
                "history_ratio": round(page_large / page_small, 2),
                "history_ratio_target": "<= 1.5",
            }
        )
    )


if __name__ == "__main__":
    main()
