import pytest

from hooks import executors, services
from hooks.capabilities.periodic_report import reduce_trigger, report_window
from hooks.models import HookIntent, IntentExecution
from loopx_site.core.access import SHELL
from loopx_site.core.errors import DomainError
from tests.hooks.conftest import PERIODIC
from tests.hooks.factories import TodoFactory, rendered_execution, settle


@pytest.fixture
def two_triggers(agent):
    """Two pending periodic-report intents of Goal demo (a completion and a replan)."""
    TodoFactory(goal=agent.goal, todo_id="t1", segment_ref="seg-1")
    TodoFactory(goal=agent.goal, todo_id="t2", segment_ref="seg-2")
    settle(todo_id="t1", turn="turn-1")
    settle(todo_id="t2", turn="turn-2", event_kind="replan_recorded")
    return list(HookIntent.objects.order_by("created_at", "pk"))


def test_preview_decides_nothing_and_writes_nothing(two_triggers):
    result = rendered_execution(executor="fake-scheduler")
    assert [d["action"] for d in result["decisions"]] == ["would_execute", "would_execute"]
    assert set(HookIntent.objects.values_list("status", flat=True)) == {"pending"}
    assert not IntentExecution.objects.exists()


def test_execute_records_one_decision_per_intent_and_dedupes_on_intent_id(two_triggers):
    first = rendered_execution(executor="fake-scheduler", execute=True)
    decisions = [d["decision"]["decision"] for d in first["decisions"]]
    assert decisions == ["promote", "hold"]  # one report per weekly window
    hold = first["decisions"][1]["decision"]
    assert hold["reason"] == "window_already_promoted"
    assert hold["promoted_by"] == two_triggers[0].intent_id
    assert set(HookIntent.objects.values_list("status", flat=True)) == {"executed"}
    again = rendered_execution(executor="fake-scheduler", execute=True)
    assert again["decisions"] == []
    assert IntentExecution.objects.count() == 2
    rows = {e.intent.intent_id: e for e in IntentExecution.objects.select_related("intent")}
    assert rows[two_triggers[0].intent_id].decision == first["decisions"][0]["decision"]
    assert rows[two_triggers[0].intent_id].decision_digest.startswith("sha256:")


def test_executor_budget_limits_a_run_and_defers_the_rest(two_triggers):
    result = rendered_execution(executor="fake-scheduler", execute=True, limit=1)
    assert result["budget"]["used"] == 1
    assert result["deferred_by_budget"] == 1
    assert HookIntent.objects.filter(status="pending").count() == 1


def test_executor_rejects_kinds_outside_its_allowlist(todo, install):
    install("Proposer")
    settle()
    result = rendered_execution(executor="fake-scheduler", execute=True)
    assert result["decisions"][0]["action"] == "rejected"
    assert result["decisions"][0]["reason"] == "intent_kind_not_allowlisted"
    assert HookIntent.objects.get().status == "rejected"


def test_admit_then_execute_through_the_executor(two_triggers):
    target = two_triggers[1].intent_id
    admitted = services.admit_intents(
        executor="fake-scheduler", intent_ids=[target], operator=SHELL
    )
    assert admitted == [
        {"intent_id": target, "action": "admitted", "reason": None, "decision": None}
    ]
    assert HookIntent.objects.get(intent_id=target).status == "admitted"
    result = rendered_execution(executor="fake-scheduler", execute=True, intent_ids=[target])
    assert result["decisions"][0]["action"] == "executed"
    assert HookIntent.objects.get(intent_id=target).status == "executed"
    assert IntentExecution.objects.get().admission == "admitted"


def test_reject_is_final_and_executing_later_skips_it(two_triggers):
    target = two_triggers[0].intent_id
    out = services.reject_intents(executor="fake-scheduler", intent_ids=[target], operator=SHELL)
    assert out[0]["action"] == "rejected"
    again = services.reject_intents(executor="fake-scheduler", intent_ids=[target], operator=SHELL)
    assert again[0]["action"] == "deduplicated"
    result = rendered_execution(executor="fake-scheduler", execute=True)
    assert [d["intent_id"] for d in result["decisions"]] == [two_triggers[1].intent_id]
    assert result["decisions"][0]["decision"]["decision"] == "promote"
    assert HookIntent.objects.get(intent_id=target).status_reason == "operator_rejected"


def test_unknown_executor_and_unknown_intent_are_structured_errors(two_triggers):
    with pytest.raises(DomainError) as caught:
        rendered_execution(executor="real-mailer")
    assert (caught.value.code, caught.value.field) == ("unknown_executor", "executor")
    with pytest.raises(DomainError) as caught:
        services.admit_intents(
            executor="fake-scheduler", intent_ids=["pwi_missing"], operator=SHELL
        )
    assert caught.value.code == "intent_not_found"
    assert caught.value.http_status == 404


def test_executor_allowlist_is_its_own_and_grants_no_scope():
    spec = executors.get("fake-scheduler")
    assert spec.granted_write_scopes == frozenset()
    assert spec.allowlist == {"periodic_report.trigger_evaluation": ("evaluate_runtime_trigger",)}
    assert executors.get("nope") is None


def _intent(window="2026-W35", intent_id="pwi_b", transition="replan_recorded"):
    return {
        "intent_id": intent_id,
        "policy_version": "weekly_v0",
        "payload": {
            "transition": transition,
            "segment_ref": None,
            "report_window": window,
            "source_event_refs": ["receipt:dwr_1"],
        },
    }


def test_trigger_reducer_promotes_once_per_window():
    first = reduce_trigger(intent=_intent(intent_id="pwi_a"), events=[])
    assert (first["decision"], first["reason"]) == ("promote", "replan_recorded_trigger")
    events = [{"intent_id": "pwi_a", **first}]
    assert reduce_trigger(intent=_intent(), events=events)["decision"] == "hold"
    next_week = reduce_trigger(intent=_intent(window="2026-W36"), events=events)
    assert next_week["decision"] == "promote"
    held = [{"intent_id": "pwi_h", "report_window": "2026-W35", "decision": "hold"}]
    assert reduce_trigger(intent=_intent(), events=held)["decision"] == "promote"


def test_report_window_is_the_iso_week():
    assert report_window("2026-08-26T00:00:00Z") == "2026-W35"
    assert report_window("2027-01-01T10:00:00.5Z") == "2026-W53"


def test_default_hook_installation_is_the_periodic_report_trigger(settings):
    assert settings.LOOPX_POST_WRITEBACK_HOOKS == [PERIODIC]
