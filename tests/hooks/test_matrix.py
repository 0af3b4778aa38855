"""The RFC's section-12 validation matrix, one test per row (plus variants)."""

import json
import logging
import socket
import subprocess
import urllib.request

import pytest
from django.db import DatabaseError

from hooks import documents, selectors, services
from hooks.models import (
    DurableWritebackReceipt,
    HookDispatch,
    HookIntent,
    IntentExecution,
    QuotaSpend,
    Todo,
)
from loopx_site.core.errors import DomainError
from tests.helpers import run_cli
from tests.hooks import providers
from tests.hooks.conftest import PERIODIC
from tests.hooks.factories import TodoFactory, rendered_execution, rendered_replay, settle


# Row: Phase disabled or capability not installed -> zero invocations and no sidecar intent
def test_matrix_phase_disabled_by_profile_invokes_nothing(todo, install):
    install("Proposer", PERIODIC)
    payload = settle(profile="hooks_disabled").payload
    assert payload["hook_phase"]["status"] == "disabled"
    assert providers.CALLS == {}
    assert not HookDispatch.objects.exists()
    assert not HookIntent.objects.exists()


def test_matrix_phase_disabled_by_setting_invokes_nothing(todo, install, settings):
    install("Proposer")
    settings.LOOPX_POST_WRITEBACK_HOOKS_ENABLED = False
    assert settle().payload["hook_phase"]["status"] == "disabled"
    assert providers.CALLS == {}
    assert not HookIntent.objects.exists()


def test_matrix_capability_not_installed_invokes_nothing(todo, install):
    install()
    payload = settle().payload
    assert payload["hook_phase"]["dispatches"] == []
    assert providers.CALLS == {}
    assert not HookIntent.objects.exists()


def test_matrix_capability_not_on_the_profile_allowlist_invokes_nothing(todo, install, settings):
    install("Proposer")
    settings.LOOPX_POST_WRITEBACK_HOOK_ALLOWLIST = ["periodic_report.runtime_trigger"]
    settle()
    assert providers.CALLS == {}
    assert not HookIntent.objects.exists()


# Row: Registration malformed or exceeds budget -> rejected before provider invocation
@pytest.mark.parametrize(
    "provider", ["WithCommand", "WithWriteScope", "AbortPolicy", "HugeTimeout"]
)
def test_matrix_malformed_or_over_budget_registration_is_rejected_before_invocation(
    todo, install, provider
):
    install(provider)
    (dispatch,) = settle().payload["hook_phase"]["dispatches"]
    assert dispatch["failure_code"] == "registration_rejected"
    assert dispatch["attempts"] == 1
    assert providers.CALLS == {}
    assert not HookIntent.objects.exists()


# Row: Primary validation or writeback fails -> zero post-writeback invocations
def test_matrix_primary_validation_failure_invokes_no_hook(todo, install):
    install("Proposer")
    Todo.objects.filter(pk=todo.pk).update(state="completed", completed_at=todo.created_at)
    with pytest.raises(DomainError):
        settle()
    assert providers.CALLS == {}
    assert not DurableWritebackReceipt.objects.exists()


def test_matrix_primary_writeback_failure_invokes_no_hook(todo, install, monkeypatch):
    install("Proposer")

    def fail(*args, **kwargs):
        raise DatabaseError("writeback failed")

    monkeypatch.setattr(DurableWritebackReceipt, "save", fail)
    with pytest.raises(DatabaseError):
        settle()
    assert providers.CALLS == {}
    assert not DurableWritebackReceipt.objects.exists()
    assert Todo.objects.get().state == "open"


# Row: Committed writeback -> exactly one dispatch identity per admitted hook
def test_matrix_committed_writeback_has_one_dispatch_identity_per_admitted_hook(todo, install):
    install("Proposer", "Inert", "SecondProposer")
    payload = settle().payload
    ids = [d["dispatch_id"] for d in payload["hook_phase"]["dispatches"]]
    assert len(ids) == len(set(ids)) == 3
    assert HookDispatch.objects.count() == 3
    assert providers.CALLS == {"alpha.inert": 1, "beta.proposer": 1, "gamma.proposer": 1}


# Row: Primary writeback replay -> same dispatch receipt; no duplicate intent
def test_matrix_primary_writeback_replay_returns_the_same_dispatch_receipt(todo, install):
    install("Proposer")
    first = settle().payload["hook_phase"]["dispatches"]
    for _ in range(3):
        assert settle().payload["hook_phase"]["dispatches"] == first
    replay = rendered_replay(receipt_id=first[0]["receipt_id"], execute=True)
    assert replay["receipts"][0]["dispatches"] == first
    assert HookIntent.objects.count() == 1
    assert providers.CALLS["beta.proposer"] == 1


# Row: Same identity, different payload -> conflict rejected and original receipt retained
def test_matrix_same_identity_different_payload_is_rejected_and_original_kept(todo, install):
    install("Nondeterministic")
    (original,) = settle().payload["hook_phase"]["dispatches"]
    receipt = DurableWritebackReceipt.objects.get()
    from hooks import dispatcher, registry

    conflict = services.record_outcome(
        receipt, dispatcher.evaluate(receipt, registry.installed().hooks[0])
    )
    assert conflict.code == "intent_conflict"
    assert (
        documents.dispatches(selectors.receipt_dispatches(receipt))[0]["result_digest"]
        == original["result_digest"]
    )
    assert HookIntent.objects.count() == 1


# Row: Provider raises, times out, or returns malformed output -> compact isolated failure
@pytest.mark.parametrize(
    ("provider", "code"),
    [
        ("Raiser", "producer_failed"),
        ("Sleeper", "producer_timed_out"),
        ("Malformed", "result_contract_rejected"),
    ],
)
def test_matrix_provider_failure_leaves_primary_receipt_and_spend_eligibility(
    todo, install, provider, code
):
    install(provider)
    payload = settle().payload
    (dispatch,) = payload["hook_phase"]["dispatches"]
    assert (dispatch["status"], dispatch["failure_code"]) == ("failed", code)
    assert len(dispatch["failure_reason"]) <= 200
    receipt = DurableWritebackReceipt.objects.get()
    assert documents.receipt(receipt) == payload["receipt"]
    assert selectors.quota_spend_eligibility(receipt)["eligible"] is True
    assert QuotaSpend.objects.count() == 1


# Row: Multiple hooks -> stable order, independent budgets, and failure isolation
def test_matrix_multiple_hooks_stable_order_independent_budgets_isolation(todo, install):
    install("TooManyIntents", "Raiser", "SecondProposer", "Sleeper", "Proposer", "Inert")
    payload = settle().payload
    order = [d["hook_id"] for d in payload["hook_phase"]["dispatches"]]
    assert order == sorted(order)
    status = {
        d["hook_id"]: (d["status"], d["failure_code"]) for d in payload["hook_phase"]["dispatches"]
    }
    assert status == {
        "alpha.inert": ("not_applicable", None),
        "beta.proposer": ("accepted", None),
        "delta.raiser": ("failed", "producer_failed"),
        "epsilon.sleeper": ("failed", "producer_timed_out"),
        "gamma.proposer": ("accepted", None),
        "kappa.many": ("failed", "result_contract_rejected"),
    }
    assert sorted(HookIntent.objects.values_list("hook_id", flat=True)) == [
        "beta.proposer",
        "gamma.proposer",
    ]
    assert [o["hook_id"] for o in payload["hook_phase"]["outcomes"]] == order


# Row: Intent requests scope -> proposal recorded only; no authority or effect granted
def test_matrix_intent_requesting_scope_is_recorded_only(todo, install):
    install("tests.hooks.providers.ScopedPeriodicTrigger")
    settle()
    intent = HookIntent.objects.get()
    assert intent.requested_write_scope == ["periodic_report.sink:deliver"]
    assert intent.status == "pending"
    packet = documents.intent(intent)
    assert packet["grants_new_action_authority"] is False
    assert packet["external_write_performed"] is False
    result = rendered_execution(executor="fake-scheduler", execute=True)
    assert result["decisions"][0]["action"] == "rejected"
    assert result["decisions"][0]["reason"] == "write_scope_not_granted"
    intent.refresh_from_db()
    assert intent.status == "rejected"
    assert IntentExecution.objects.get().decision is None


# Row: Periodic-report completion threshold -> one typed trigger-evaluation intent
def test_matrix_periodic_report_completion_threshold_yields_one_intent(agent):
    TodoFactory(goal=agent.goal, todo_id="a", segment_ref="seg-9")
    TodoFactory(goal=agent.goal, todo_id="b", segment_ref="seg-9")
    first = settle(todo_id="a", turn="turn-a").payload
    assert first["hook_phase"]["dispatches"][0]["status"] == "not_applicable"
    second = settle(todo_id="b", turn="turn-b").payload
    (dispatch,) = second["hook_phase"]["dispatches"]
    assert dispatch["status"] == "accepted"
    (intent,) = HookIntent.objects.all()
    assert (intent.intent_kind, intent.operation, intent.policy_version) == (
        "periodic_report.trigger_evaluation",
        "evaluate_runtime_trigger",
        "weekly_v0",
    )
    assert intent.payload["transition"] == "segment_completed"
    assert intent.payload["segment_ref"] == "seg-9"
    decided = rendered_execution(executor="fake-scheduler", execute=True)
    assert decided["decisions"][0]["decision"]["decision"] == "promote"


# Row: Periodic-report replan transition -> one typed trigger-evaluation intent
def test_matrix_periodic_report_replan_transition_yields_one_intent(todo):
    settle(event_kind="replan_recorded")
    (intent,) = HookIntent.objects.all()
    assert intent.intent_kind == "periodic_report.trigger_evaluation"
    assert intent.payload["transition"] == "replan_recorded"
    decided = rendered_execution(executor="fake-scheduler", execute=True)
    assert decided["decisions"][0]["action"] == "executed"


# Row: External-write assertion -> no network or sink call before governed admission
def test_matrix_no_network_or_sink_call_anywhere(todo, monkeypatch):
    calls = []

    def forbidden(name):
        def _raise(*args, **kwargs):
            calls.append(name)
            raise AssertionError(f"{name} called")

        return _raise

    monkeypatch.setattr(socket.socket, "connect", forbidden("socket.connect"))
    monkeypatch.setattr(socket, "create_connection", forbidden("create_connection"))
    monkeypatch.setattr(urllib.request, "urlopen", forbidden("urlopen"))
    monkeypatch.setattr(subprocess, "Popen", forbidden("Popen"))
    settle()
    assert HookIntent.objects.get().status == "pending"  # nothing executes on its own
    preview = rendered_execution(executor="fake-scheduler")
    assert preview["decisions"][0]["action"] == "would_execute"
    assert HookIntent.objects.get().status == "pending"
    done = rendered_execution(executor="fake-scheduler", execute=True)
    assert done["network_calls"] == done["sink_calls"] == 0
    decision = done["decisions"][0]["decision"]
    assert decision["sink_called"] is False
    assert decision["external_write_performed"] is False
    assert calls == []


# Row: Public-boundary scan -> no private names, URLs, paths, credentials, transcripts,
# raw logs or provider payloads
PRIVATE = [
    "/home/alice",
    "alice@example.org",
    "https://",
    "hunter2",
    "password",
    "Traceback",
    "RuntimeError",
    "Private task prose",
    "SECRET-TITLE",
    "tests.hooks.providers",
]


def test_matrix_public_boundary_scan_of_every_output(agent, install, caplog):
    install(PERIODIC, "Raiser", "Proposer", "Sleeper", "LeakyPayload")
    caplog.set_level(logging.DEBUG, logger="loopx")
    TodoFactory(
        goal=agent.goal,
        todo_id="t1",
        segment_ref="seg-1",
        title="SECRET-TITLE: mail alice@example.org https://x password=hunter2 /home/alice",
    )
    TodoFactory(goal=agent.goal, todo_id="t2", segment_ref="/home/alice/seg")
    outputs = [
        settle(execute=False).payload,
        settle().payload,
        settle().payload,
        settle(todo_id="t2", turn="turn-2", event_kind="replan_recorded").payload,
        documents.dispatch_list(selectors.list_dispatches()),
        documents.intent_list(selectors.list_intents()),
        rendered_replay(execute=True),
        rendered_execution(executor="fake-scheduler", execute=True),
    ]
    for argv in (
        ("hooks", "dispatches"),
        ("hooks", "intents"),
        ("hooks", "replay"),
        ("turn", "settle", "--goal-id", "demo", "--agent-id", "author", "--todo-id", "t1",
         "--turn-instance-id", "turn-9", "--event-kind", "todo_completed", "--execute"),
    ):  # fmt: skip
        outputs.append(run_cli(*argv).stdout)
    rows = list(HookDispatch.objects.values()) + list(HookIntent.objects.values())
    rows += list(IntentExecution.objects.values())
    blob = json.dumps(outputs, default=str) + str(rows) + caplog.text
    assert "failure_code" in blob  # the scan saw real failure receipts
    assert "epsilon.sleeper timed out" in caplog.text  # and the log lines
    for needle in PRIVATE:
        assert needle not in blob, needle
