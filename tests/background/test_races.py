"""N workers, one effect: two threads run the same task at once against the same
database (real transactions; on PostgreSQL the sweeps claim rows with SKIP LOCKED, on
SQLite its write lock serialises them). Run on SQLite and with
``scripts/with-postgres.sh``."""

import datetime as dt
import threading

import pytest
from django.db import connection, transaction

from hooks import services as hooks_services
from hooks.models import (
    DurableWritebackReceipt,
    HookDispatch,
    HookIntent,
    HookPhaseCheckpoint,
    IntentExecution,
)
from hooks.tasks import execute_admitted_intents, recover_dispatches
from loopx_site.core.access import SHELL
from loopx_site.core.models import BackgroundRun
from reward_memory.models import IngestEvent, PendingIngest, RecordTransition
from reward_memory.tasks import expire_records, reconcile_ingests
from tests.background.conftest import crashed_settles, seed_goal
from tests.reward_memory import factories as f

pytestmark = pytest.mark.django_db(transaction=True)

postgres_only = pytest.mark.skipif(
    "connection.vendor != 'postgresql'",
    reason="SKIP LOCKED needs PostgreSQL; SQLite's write lock makes a second worker wait",
)


def _run(task, **kwargs) -> dict:
    # Two eager runs on two threads: Celery's "inside a task" guard is process-wide.
    return task.apply_async(kwargs=kwargs, ignore_result=False).get(disable_sync_subtasks=False)


def race(n: int, fn) -> list:
    """Run ``fn`` on ``n`` threads released together; their results (or exceptions)."""
    barrier = threading.Barrier(n)
    results: list = [None] * n

    def work(i: int) -> None:
        try:
            barrier.wait(timeout=10)
            results[i] = fn()
        except Exception as exc:  # asserted below
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return results


def _total(results: list, key: str) -> int:
    assert not [r for r in results if isinstance(r, Exception)], results
    return sum(r.get(key, 0) for r in results)


def test_two_workers_recovering_at_once_replay_each_receipt_once(eager):
    seed_goal(4)
    crashed_settles(4)
    results = race(2, lambda: _run(recover_dispatches, grace_seconds=0))
    assert _total(results, "claimed") == 4
    assert all(r["claimed"] + r["skipped"] == r["candidates"] for r in results)
    assert HookDispatch.objects.count() == 4
    assert HookPhaseCheckpoint.objects.count() == 4
    assert HookDispatch.objects.filter(attempts=1).count() == 4  # each provider ran once
    assert list(BackgroundRun.objects.values_list("outcome", flat=True)) == ["ok", "ok"]


def test_two_workers_executing_admitted_intents_execute_each_once(eager):
    seed_goal(2)
    from tests.hooks.factories import settle

    settle(todo_id="t1", turn="turn-1")
    settle(todo_id="t2", turn="turn-2", event_kind="replan_recorded")
    ids = list(HookIntent.objects.values_list("intent_id", flat=True))
    hooks_services.admit_intents(executor="fake-scheduler", intent_ids=ids, operator=SHELL)
    results = race(2, lambda: _run(execute_admitted_intents))
    assert _total(results, "claimed") == 2
    assert _total(results, "executed") == 2
    assert set(HookIntent.objects.values_list("status", flat=True)) == {"executed"}
    assert IntentExecution.objects.filter(decision__isnull=False).count() == 2


def test_two_workers_reconciling_at_once_activate_the_event_once(eager, double_corpus, double):
    double.tamper_readback = True
    f.ingested(event=f.scoped_event(), goal_id="demo", agent_id="author", execute=True)
    double.tamper_readback = False
    results = race(2, lambda: _run(reconcile_ingests))
    assert _total(results, "activated") == 1
    assert _total(results, "claimed") + _total(results, "skipped") >= 1
    assert IngestEvent.objects.get().status == "activated"
    assert PendingIngest.objects.filter(resolved_at__isnull=True).count() == 0
    assert len(double.documents) == 1


def test_two_workers_expiring_at_once_close_each_record_once(eager, corpus, frozen_clock):
    lessons = ("Lead PR descriptions with the effect.", "Name the reviewer.", "Link the issue.")
    for n, lesson in enumerate(lessons):  # three distinct lessons (a restated one merges)
        f.ingested(
            event=f.scoped_event(
                f"ev-{n}",
                expires_at="2026-12-02T00:00:00Z",
                content_summary=lesson,
            ),
            goal_id="demo",
            agent_id="author",
            execute=True,
        )
    frozen_clock.advance(dt.timedelta(days=2))
    results = race(2, lambda: _run(expire_records))
    assert _total(results, "expired") == 3
    assert RecordTransition.objects.filter(to_state="expired").count() == 3


def _hold(row_lock, release: threading.Event, held: threading.Event) -> threading.Thread:
    """Another worker: holds ``row_lock()``'s rows in an open transaction until released."""

    def work() -> None:
        try:
            with transaction.atomic():
                list(row_lock())
                held.set()
                release.wait(30)
        finally:
            connection.close()

    thread = threading.Thread(target=work)
    thread.start()
    assert held.wait(10)
    return thread


@postgres_only
def test_a_receipt_another_worker_holds_is_skipped_not_waited_for(eager):
    seed_goal()
    crashed_settles(1)
    release, held = threading.Event(), threading.Event()
    other = _hold(lambda: DurableWritebackReceipt.objects.select_for_update(), release, held)
    try:
        skipped = _run(recover_dispatches, grace_seconds=0)
    finally:
        release.set()
        other.join(30)
    assert (skipped["claimed"], skipped["skipped"]) == (0, 1)
    assert not HookPhaseCheckpoint.objects.exists()
    assert _run(recover_dispatches, grace_seconds=0)["claimed"] == 1


@postgres_only
def test_an_agent_another_worker_reconciles_is_skipped(eager, double_corpus, double):
    double.tamper_readback = True
    f.ingested(event=f.scoped_event(), goal_id="demo", agent_id="author", execute=True)
    double.tamper_readback = False
    release, held = threading.Event(), threading.Event()
    other = _hold(lambda: PendingIngest.objects.select_for_update(), release, held)
    try:
        skipped = _run(reconcile_ingests)
    finally:
        release.set()
        other.join(30)
    assert (skipped["claimed"], skipped["skipped"], skipped["attempted"]) == (0, 1, 0)
    assert _run(reconcile_ingests)["activated"] == 1
