"""Every background task, run eagerly: it calls its app's service, is idempotent (run
twice → one effect) and journals what it did in a ``core.BackgroundRun`` row."""

import datetime as dt

import pytest

from hooks import services as hooks_services
from hooks.models import HookDispatch, HookIntent, HookPhaseCheckpoint, IntentExecution
from hooks.tasks import execute_admitted_intents, recover_dispatches
from loopx_site.core.access import SHELL
from loopx_site.core.models import BackgroundRun
from reward_memory import services as rm
from reward_memory.models import IngestEvent, MemoryRecord, PendingIngest, RecordTransition
from reward_memory.tasks import expire_records, provider_deletions, reconcile_ingests
from tests.background.conftest import crashed_settles, seed_goal
from tests.reward_memory import factories as f

pytestmark = pytest.mark.django_db


def _run(task, **kwargs) -> dict:
    """Send the task as a scheduler would; eager, it runs here (its value kept)."""
    return task.apply_async(kwargs=kwargs, ignore_result=False).get()


def _only_numbers(counts: dict) -> bool:
    return all(isinstance(k, str) and type(v) is int for k, v in counts.items())


def test_recover_task_replays_a_crashed_hook_phase_once(eager):
    seed_goal(2)
    receipts = crashed_settles(2)
    first = _run(recover_dispatches, grace_seconds=0)
    assert (first["candidates"], first["claimed"], first["skipped"]) == (2, 2, 0)
    assert first["dispatches_recorded"] == 2
    assert HookPhaseCheckpoint.objects.count() == 2
    assert set(HookDispatch.objects.values_list("receipt__receipt_id", flat=True)) == set(receipts)
    ids = sorted(HookIntent.objects.values_list("intent_id", flat=True))

    again = _run(recover_dispatches, grace_seconds=0)
    assert (again["candidates"], again["claimed"]) == (0, 0)
    assert HookDispatch.objects.count() == 2
    assert sorted(HookIntent.objects.values_list("intent_id", flat=True)) == ids

    runs = list(BackgroundRun.objects.order_by("pk"))
    assert [r.task for r in runs] == ["loopx.hooks.recover_dispatches"] * 2
    assert [r.outcome for r in runs] == ["ok", "ok"]
    assert runs[0].counts["claimed"] == 2
    assert runs[0].finished_at is not None
    assert all(_only_numbers(r.counts) and ":" in r.worker for r in runs)
    assert not any(rid in str(r.counts) for r in runs for rid in receipts)


def test_recover_task_leaves_a_fresh_receipt_to_its_own_settle(eager, frozen_clock):
    seed_goal()
    crashed_settles(1)
    assert _run(recover_dispatches)["candidates"] == 0  # within the grace period
    assert not HookPhaseCheckpoint.objects.exists()
    frozen_clock.advance(dt.timedelta(seconds=61))
    assert _run(recover_dispatches)["claimed"] == 1
    assert HookPhaseCheckpoint.objects.count() == 1


def test_execute_task_executes_admitted_intents_once_and_leaves_pending_ones(eager):
    seed_goal(2)
    from tests.hooks.factories import settle

    settle(todo_id="t1", turn="turn-1")
    settle(todo_id="t2", turn="turn-2", event_kind="replan_recorded")
    first, second = HookIntent.objects.order_by("created_at", "pk")
    hooks_services.admit_intents(
        executor="fake-scheduler", intent_ids=[first.intent_id], operator=SHELL
    )
    done = _run(execute_admitted_intents)
    assert (done["candidates"], done["claimed"], done["executed"]) == (1, 1, 1)
    assert HookIntent.objects.get(pk=first.pk).status == "executed"
    assert HookIntent.objects.get(pk=second.pk).status == "pending"  # an operator admits it

    again = _run(execute_admitted_intents)
    assert again["candidates"] == 0
    execution = IntentExecution.objects.get()
    assert execution.intent_id == first.pk
    assert execution.decision is not None


def test_a_bad_argument_is_a_failed_run_with_its_code_and_nothing_written(eager):
    result = _run(execute_admitted_intents, executor="no-such-executor")
    assert result["error_code"] == "unknown_executor"
    run = BackgroundRun.objects.get()
    assert (run.outcome, run.error_code, run.counts) == ("failed", "unknown_executor", {})
    assert not IntentExecution.objects.exists()


def test_reconcile_task_retries_every_agents_pending_ingests_once(eager, double_corpus, double):
    double.tamper_readback = True
    f.ingested(event=f.scoped_event(), goal_id="demo", agent_id="author", execute=True)
    assert PendingIngest.objects.filter(resolved_at__isnull=True).count() == 1
    still = _run(reconcile_ingests)
    assert (still["agents"], still["claimed"], still["still_pending"]) == (1, 1, 1)
    double.tamper_readback = False
    done = _run(reconcile_ingests)
    assert (done["claimed"], done["activated"]) == (1, 1)
    assert IngestEvent.objects.get().status == "activated"
    assert MemoryRecord.objects.get().lifecycle_state == "active"
    assert len(double.documents) == 1
    again = _run(reconcile_ingests)
    assert (again["agents"], again["claimed"]) == (0, 0)
    assert [r.outcome for r in BackgroundRun.objects.all()] == ["ok"] * 3


def test_expire_task_closes_due_records_once(eager, corpus, frozen_clock):
    receipt = f.ingested(
        event=f.scoped_event("ev-1", expires_at="2026-12-02T00:00:00Z"),
        goal_id="demo",
        agent_id="author",
        execute=True,
    )
    nothing_due = _run(expire_records)
    assert nothing_due == {"run_id": BackgroundRun.objects.get().pk, "due": 0, "expired": 0}
    frozen_clock.advance(dt.timedelta(days=2))
    assert _run(expire_records)["expired"] == 1
    assert _run(expire_records)["expired"] == 0
    record = MemoryRecord.objects.get(record_ref=receipt["record_ref"])
    assert record.lifecycle_state == "expired"
    assert RecordTransition.objects.filter(record=record, to_state="expired").count() == 1


def test_provider_delete_task_retries_a_pending_delete_until_confirmed(
    eager, double_corpus, double, frozen_clock
):
    from reward_memory.models import ProviderDeletion
    from reward_memory.services.provider_deletions import backoff

    ref = f.ingested(event=f.scoped_event(), goal_id="demo", agent_id="author", execute=True)[
        "record_ref"
    ]
    double.available = False  # the provider is down when the record is retired
    rm.retire_record(record_ref=ref, principal=f.op(f.RETIRER))
    row = ProviderDeletion.objects.get()
    assert (row.state, row.failure_kind) == ("pending", "unavailable")
    double.available = True
    assert _run(provider_deletions)["due"] == 0  # backing off
    frozen_clock.advance(backoff(1))
    done = _run(provider_deletions)
    assert (done["due"], done["confirmed"]) == (1, 1)
    assert _run(provider_deletions)["due"] == 0  # once
    assert ProviderDeletion.objects.get().state == "confirmed"
    assert _only_numbers(done)
