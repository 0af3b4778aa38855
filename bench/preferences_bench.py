"""Explicit preference journal benchmarks (quality.md, issue 16); one JSON line on stdout.

Every figure is a ratio against the same work done raw on the same database, measured by
alternating the service call and its baseline call by call (the order flips every round):

* read, 64 keys: ``services.read`` ÷ its own SELECT (captured with
  ``CaptureQueriesContext``) replayed through the raw DB-API cursor with ``fetchall``
  (target ≤ 2×);
* remember commit: ``services.remember --execute`` on scope A ÷ the statements the same
  service issued for the identical operation on a twin scope C, replayed raw on a third
  twin scope B in one transaction (target ≤ 2×, issue 25). The three scopes hold
  identical journals throughout, so each baseline does exactly the work of its service
  call;
* history page: first page ÷ the page after a cursor at depth 10,000 (target ≤ 1.5×).

The run prints the database's durability settings, the date and the machine's 1-minute
load average beside its figures.

Run: ``.venv/bin/python bench/preferences_bench.py [--rounds N]`` (SQLite on a
throwaway file), or with ``scripts/with-postgres.sh`` for PostgreSQL.
"""

import argparse
import datetime as dt
import json
import os
import statistics
import time

from _setup import django_on_temp_db

KEYS = 64
SUBJECT_WRITES = (
    "UPDATE PREFERENCES_PREFERENCESUBJECT",
    "INSERT INTO PREFERENCES_PREFERENCESUBJECT",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--history-depth", type=int, default=10_000)
    args = parser.parse_args()
    tmp = django_on_temp_db()

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from loopx_site.core import services as core_services
    from preferences import selectors, services

    core_services.register_goal(goal_id="bench", agent_ids=["a", "b", "c", "h"], state_ref="s")
    vendor = connection.vendor
    connection.ensure_connection()
    raw = connection.connection

    def remember(agent, i, *, key=None):
        return services.remember(
            goal_id="bench",
            agent_id=agent,
            key=key or f"k{i % KEYS:02d}",
            statement=f"Keep the stated constraint number {i}.",
            source_ref=f"owner-message-{i}",
            source_quote="Please keep this.",
            expected_revision=str(i) if i else "none",
            operation_id=f"op-{i}",
            execute=True,
        )

    for agent in ("a", "b", "c"):
        for i in range(KEYS):
            remember(agent, i)

    # -- read: service vs its own SELECT replayed raw ---------------------------------
    with CaptureQueriesContext(connection) as read_queries:
        services.read(goal_id="bench", agent_id="a")
    assert len(read_queries) == 1, read_queries.captured_queries
    read_sql = read_queries[0]["sql"]

    def raw_read():
        cur = raw.cursor()
        cur.execute(read_sql)
        cur.fetchall()

    read_ratio, read_ms, raw_read_ms = alternate(
        lambda: services.read(goal_id="bench", agent_id="a"), raw_read, args.rounds
    )

    # -- remember: service on A vs C's statements replayed raw on B -------------------
    captured: list[tuple[str, tuple]] = []

    def recorder(execute, sql, params, many, context):
        captured.append((sql, tuple(params or ())))
        return execute(sql, params, many, context)

    ids = scope_ids(connection)
    begin = "BEGIN IMMEDIATE" if vendor == "sqlite" else "BEGIN"
    control = ("SAVEPOINT", "RELEASE", "BEGIN", "COMMIT", "ROLLBACK")

    def replay_on_b(statements):
        cur = raw.cursor()
        cur.execute(begin)
        operation_pk = None
        for sql, params in statements:
            if sql.upper().startswith(SUBJECT_WRITES):
                params = (*params[:5], operation_pk, *params[6:])  # B's new journal row
            cur.execute(sql, params)
            if cur.description:
                rows = cur.fetchall()
                if sql.upper().startswith("INSERT INTO PREFERENCES_PREFERENCEOPERATION"):
                    operation_pk = rows[0][0]
        cur.execute("COMMIT")

    service_s, baseline_s, statement_counts = [], [], []
    for n in range(args.rounds):
        i = KEYS + n
        captured.clear()
        with connection.execute_wrapper(recorder):
            remember("c", i)
        statements = [
            to_b(sql, params, ids, vendor)
            for sql, params in captured
            if not sql.lstrip().upper().startswith(control)
        ]
        statement_counts.append(len(statements))
        first_service = n % 2 == 0
        for turn in (0, 1):
            if (turn == 0) == first_service:
                start = time.perf_counter()
                remember("a", i)
                service_s.append(time.perf_counter() - start)
            else:
                start = time.perf_counter()
                replay_on_b(statements)
                baseline_s.append(time.perf_counter() - start)
    remember_ms = statistics.median(service_s) * 1000
    raw_remember_ms = statistics.median(baseline_s) * 1000
    assert_twins(connection, ids)

    # -- history: first page vs a page at depth ---------------------------------------
    for i in range(args.history_depth):
        remember("h", i, key=f"k{i % KEYS:02d}")
    if vendor == "postgresql":  # planner statistics, as autovacuum would keep them
        with connection.cursor() as c:
            c.execute("ANALYZE")
    cursor = None
    page = selectors.history(goal_id="bench", agent_id="h", limit=200)
    while page["has_more"] and page["events"][-1]["sequence"] < args.history_depth - 200:
        cursor = page["next_cursor"]
        page = selectors.history(goal_id="bench", agent_id="h", after_cursor=cursor, limit=200)
    deep_cursor = page["next_cursor"] or cursor
    history_ratio, deep_ms, first_ms = alternate(
        lambda: selectors.history(goal_id="bench", agent_id="h", after_cursor=deep_cursor),
        lambda: selectors.history(goal_id="bench", agent_id="h"),
        args.rounds,
    )

    print(
        json.dumps(
            {
                "benchmark": "preferences",
                "backend": vendor,
                "date": dt.date.today().isoformat(),
                "durability": durability(connection),
                "load_average_1m": round(os.getloadavg()[0], 2),
                "rounds": args.rounds,
                "read_64_keys_median_ms": round(read_ms, 4),
                "raw_select_same_rows_median_ms": round(raw_read_ms, 4),
                "read_ratio": round(read_ratio, 2),
                "read_ratio_target": "<= 2",
                "remember_median_ms": round(remember_ms, 4),
                "raw_replay_same_statements_median_ms": round(raw_remember_ms, 4),
                "remember_statements": statistics.median(statement_counts),
                "remember_ratio": round(remember_ms / raw_remember_ms, 2),
                "remember_ratio_target": "<= 2",
                "history_first_page_ms": round(first_ms, 4),
                "history_page_at_depth_ms": round(deep_ms, 4),
                "history_depth": args.history_depth,
                "history_ratio": round(history_ratio, 2),
                "history_ratio_target": "<= 1.5",
            }
        )
    )
    if tmp is not None:
        connection.close()
        for suffix in ("", "-wal", "-shm"):
            tmp.with_name(tmp.name + suffix).unlink(missing_ok=True)
        tmp.parent.rmdir()


def alternate(service, baseline, rounds):
    """Median of each, timed call by call in alternating order; returns the ratio."""
    a, b = [], []
    for n in range(rounds):
        for turn in (0, 1):
            fn, sink = (service, a) if (turn == 0) == (n % 2 == 0) else (baseline, b)
            start = time.perf_counter()
            fn()
            sink.append(time.perf_counter() - start)
    ma, mb = statistics.median(a), statistics.median(b)
    return ma / mb, ma * 1000, mb * 1000


def scope_ids(connection):
    from preferences.models import PreferenceScope

    return dict(PreferenceScope.objects.values_list("agent_ref", "pk"))


def to_b(sql, params, ids, vendor):
    """One of C's statements, aimed at twin scope B (by parameter position: the scope id
    of the writes, the agent id of the scope-resolving SELECT)."""
    params = list(params)
    text = sql.lstrip().upper()
    if text.startswith("SELECT"):
        params = [("b" if p == "c" else p) for p in params]
    elif text.startswith("INSERT INTO PREFERENCES_PREFERENCEOPERATION"):
        params[0] = ids["b"]
    elif text.startswith(
        ("UPDATE PREFERENCES_PREFERENCESUBJECT", "INSERT INTO PREFERENCES_PREFERENCESUBJECT")
    ):
        params[-2] = ids["b"]
    elif text.startswith("UPDATE PREFERENCES_PREFERENCESCOPE"):
        params[4] = ids["b"]
    else:
        raise AssertionError(f"unexpected statement in a remember: {sql[:60]}")
    if vendor == "sqlite":
        sql = sql.replace("%s", "?")
    return sql.lstrip(), tuple(params)


def assert_twins(connection, ids):
    """A, B and C must hold the same journal: the baseline did the service's work."""
    with connection.cursor() as c:
        shapes = {}
        for agent in ("a", "b", "c"):
            c.execute(
                "SELECT revision, subject_count, used_bytes FROM preferences_preferencescope "
                "WHERE id = %s",
                [ids[agent]],
            )
            shapes[agent] = c.fetchone()
    assert shapes["a"] == shapes["b"] == shapes["c"], shapes


def durability(connection):
    with connection.cursor() as c:
        if connection.vendor == "sqlite":
            c.execute("PRAGMA journal_mode")
            mode = c.fetchone()[0]
            c.execute("PRAGMA synchronous")
            sync = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}.get(c.fetchone()[0])
            return {"journal_mode": mode, "synchronous": sync}
        settings = {}
        for name in ("fsync", "synchronous_commit", "wal_sync_method", "full_page_writes"):
            c.execute(f"SHOW {name}")
            settings[name] = c.fetchone()[0]
        return settings


if __name__ == "__main__":
    main()
