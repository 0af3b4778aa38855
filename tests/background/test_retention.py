"""Retention (issue 33): per-deployment policies remove, once their rows are older than
N days, only what no replay or audit still needs — and say what they removed."""

import datetime as dt
import json

import pytest

from hooks import services as hooks_services
from hooks.models import DurableWritebackReceipt, HookDispatch, HookIntent, HookPhaseCheckpoint
from hooks.tasks import execute_admitted_intents
from loopx_site.core import retention
from loopx_site.core.access import SHELL
from loopx_site.core.background import record_run
from loopx_site.core.models import BackgroundRun
from loopx_site.core.tasks import enforce_retention
from reward_memory.models import ApplicationReceipt, RecallReceipt
from tests.background.conftest import seed_goal
from tests.helpers import run_cli
from tests.reward_memory import factories as f

pytestmark = pytest.mark.django_db

DAYS = {"receipts": 30, "outbox": 30, "dispatches": 30, "background_runs": 30}


@pytest.fixture
def aged(eager, frozen_clock, double_corpus, double):
    """Two settles (one intent executed, one still pending), an application receipt of a
    recall, and three runs of one task — then 40 days pass."""
    from tests.hooks.factories import settle

    seed_goal(2)
    settle(todo_id="t1", turn="turn-1")
    settle(todo_id="t2", turn="turn-2", event_kind="replan_recorded")
    first, second = HookIntent.objects.order_by("created_at", "pk")
    hooks_services.admit_intents(
        executor="fake-scheduler", intent_ids=[first.intent_id], operator=SHELL
    )
    execute_admitted_intents.apply_async(ignore_result=False).get()  # a run of its own
    f.ingested(event=f.scoped_event(), goal_id="demo", agent_id="author", execute=True)
    recall = f.recalled(request=f.recall_request(double_corpus), execute=True)
    f.applied(
        document={
            "schema_version": "reward_memory_application_v0",
            "recall_id": recall["recall_id"],
            "decision": "ignore",
            "memory_refs": [],
            "reasoning_summary": "not relevant",
            "artifact_verification": {"artifact_ref": "artifact:x", "verified": False},
        },
        execute=True,
    )
    for _ in range(3):
        record_run("loopx.walk", dict)
    frozen_clock.advance(dt.timedelta(days=40))
    return {"executed": first, "pending": second}


def test_nothing_is_removed_while_every_policy_is_zero(aged, settings):
    settings.LOOPX_RETENTION_DAYS = dict.fromkeys(DAYS, 0)
    report = retention.enforce(execute=True)
    assert retention.counts(report) == dict.fromkeys(DAYS, 0)
    assert HookIntent.objects.count() == 2
    assert BackgroundRun.objects.count() == 4


def test_a_preview_removes_nothing_and_execute_removes_only_what_no_replay_needs(aged, settings):
    settings.LOOPX_RETENTION_DAYS = DAYS
    receipts = DurableWritebackReceipt.objects.count()
    preview = retention.enforce()
    assert retention.counts(preview) == {
        "receipts": 1,
        "outbox": 1,
        "dispatches": 1,  # the executed intent's; the pending one's dispatch stays
        "background_runs": 2,
    }
    assert HookIntent.objects.count() == 2  # a preview writes nothing
    done = retention.enforce(execute=True)
    assert retention.counts(done) == {
        "receipts": 1,
        "outbox": 1,
        "dispatches": 1,
        "background_runs": 2,
    }
    # kept: the pending intent and its dispatch, every settlement receipt and hook
    # checkpoint (a settle replay answers from them), the recall receipt (a recall id
    # replays from it), each task's newest run
    assert list(HookIntent.objects.values_list("pk", flat=True)) == [aged["pending"].pk]
    assert list(HookDispatch.objects.values_list("pk", flat=True)) == [aged["pending"].dispatch_id]
    assert DurableWritebackReceipt.objects.count() == receipts
    assert HookPhaseCheckpoint.objects.count() == receipts
    assert RecallReceipt.objects.count() == 1
    assert not ApplicationReceipt.objects.exists()
    assert BackgroundRun.objects.count() == 2  # each task's newest run
    assert retention.counts(retention.enforce(execute=True)) == dict.fromkeys(DAYS, 0)


def test_rows_younger_than_the_cutoff_stay(aged, settings):
    settings.LOOPX_RETENTION_DAYS = dict.fromkeys(DAYS, 60)
    assert retention.counts(retention.enforce(execute=True)) == dict.fromkeys(DAYS, 0)


def test_the_beat_task_enforces_and_journals_counts(aged, settings):
    settings.LOOPX_RETENTION_DAYS = DAYS
    result = enforce_retention.apply_async(ignore_result=False).get()
    assert result["outbox"] == 1
    run = BackgroundRun.objects.get(task="loopx.core.retention")
    assert run.outcome == "ok"
    assert run.counts["receipts"] == 1


def test_the_command_previews_and_the_admin_shows_the_policies(aged, settings, admin_client):
    settings.LOOPX_RETENTION_DAYS = DAYS
    preview = run_cli("retention", "--format", "json")
    assert preview.code == 0, preview.stderr
    document = json.loads(preview.stdout)
    assert document["executed"] is False
    assert document["policies"]["outbox"]["removed"] == {"hooks.HookIntent": 1}
    page = admin_client.get("/admin/core/backgroundrun/")
    assert "Retention: receipts 30 days" in page.content.decode()
