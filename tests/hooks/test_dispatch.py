import threading
import time

import pytest
from django.db import connection

from hooks import dispatcher, documents, registry, selectors, services
from hooks.models import DurableWritebackReceipt, HookDispatch, HookIntent, QuotaSpend, Todo
from tests.hooks import providers
from tests.hooks.factories import TodoFactory, settle


def _by_hook(payload) -> dict:
    return {d["hook_id"]: d for d in payload["hook_phase"]["dispatches"]}


def _primary_unchanged(payload):
    receipt = DurableWritebackReceipt.objects.get(receipt_id=payload["receipt"]["receipt_id"])
    assert receipt.state == "committed"
    assert documents.receipt(receipt) == payload["receipt"]
    assert QuotaSpend.objects.filter(receipt=receipt).count() == 1
    assert selectors.quota_spend_eligibility(receipt)["eligible"] is True
    assert Todo.objects.get(todo_id=payload["settlement"]["todo_id"]).state == "completed"


@pytest.mark.parametrize(
    ("provider", "code", "reason"),
    [
        ("Raiser", "producer_failed", "provider_raised"),
        ("Exiter", "producer_failed", "provider_raised"),
        ("Malformed", "result_contract_rejected", "result.dispatch_id:missing_field"),
        ("NotJson", "result_contract_rejected", "result:not_json"),
        ("Oversized", "result_contract_rejected", "result:byte_budget"),
        ("ForgedIntentId", "result_contract_rejected", "intent_id:not_derived_from_inputs"),
        ("ClaimsAuthority", "result_contract_rejected", "grants_new_action_authority"),
        ("ClaimsExternalWrite", "result_contract_rejected", "external_write_performed"),
        ("LeakyPayload", "result_contract_rejected", "payload.variant:not_public_token"),
        ("TooManyIntents", "result_contract_rejected", "result.intents:intent_budget"),
    ],
)
def test_provider_failure_is_a_compact_isolated_failure_receipt(
    todo, install, provider, code, reason
):
    install(provider)
    payload = settle().payload
    (dispatch,) = payload["hook_phase"]["dispatches"]
    assert dispatch["status"] == "failed"
    assert dispatch["failure_code"] == code
    assert reason in dispatch["failure_reason"]
    assert dispatch["intent_ids"] == []
    assert not HookIntent.objects.exists()
    assert payload["status"] == "committed"
    _primary_unchanged(payload)


def test_raised_exception_text_never_reaches_the_journal(todo, install):
    install("Raiser")
    payload = settle().payload
    row = HookDispatch.objects.get()
    stored = f"{row.failure_reason}{row.result}{payload}"
    assert "hunter2" not in stored
    assert "/home/alice" not in stored
    assert "RuntimeError" not in stored


def test_provider_sleeping_past_its_timeout_does_not_hold_the_settlement(todo, install):
    install("Sleeper", "Proposer")
    payload = settle().payload
    # settle returned while the provider is still blocked on RELEASE: it did not wait
    assert not providers.RELEASE.is_set()
    assert providers.INVOKED.ran["epsilon.sleeper"] == 1
    hooks = _by_hook(payload)
    assert hooks["epsilon.sleeper"]["failure_code"] == "producer_timed_out"
    assert hooks["epsilon.sleeper"]["failure_reason"] == "timeout_ms_exceeded"
    assert hooks["beta.proposer"]["status"] == "accepted"
    _primary_unchanged(payload)


def test_one_of_two_hooks_failing_does_not_affect_the_other(todo, install):
    install("Raiser", "Proposer")
    payload = settle().payload
    hooks = _by_hook(payload)
    assert list(hooks) == ["beta.proposer", "delta.raiser"]
    assert hooks["delta.raiser"]["failure_code"] == "producer_failed"
    assert hooks["beta.proposer"]["status"] == "accepted"
    (intent,) = HookIntent.objects.all()
    assert intent.dispatch.hook_id == "beta.proposer"
    assert hooks["beta.proposer"]["intent_ids"] == [intent.intent_id]


def test_every_hook_gets_its_own_untouched_input(todo, install):
    install("Mutator", "Proposer")
    settle()
    by_hook = {i["hook_id"]: i for i in providers.SEEN_INPUTS}
    assert by_hook["beta.proposer"]["source"]["receipt_id"].startswith("dwr_")
    assert by_hook["beta.proposer"]["projection"] is not None
    assert HookIntent.objects.get().payload["receipt_ref"].startswith("dwr_")


def test_hook_input_is_the_public_safe_projection_only(todo, install):
    install("Proposer", "NoProjection")
    payload = settle().payload
    by_hook = {i["hook_id"]: i for i in providers.SEEN_INPUTS}
    seen = by_hook["beta.proposer"]
    assert set(seen) == {
        "schema_version",
        "dispatch_id",
        "hook_id",
        "capability_id",
        "source",
        "projection",
        "boundary",
    }
    assert seen["schema_version"] == "loopx_post_writeback_hook_input_v0"
    assert seen["dispatch_id"] == _by_hook(payload)["beta.proposer"]["dispatch_id"]
    assert seen["source"]["step_kind"] == "durable_writeback"
    assert seen["source"]["receipt_id"] == payload["receipt"]["receipt_id"]
    assert seen["projection"]["schema_version"] == "loopx_post_writeback_event_projection_v0"
    assert seen["projection"]["transition"] == "segment_completed"
    assert seen["projection"]["segment"] == {
        "segment_ref": "seg-1",
        "todos_total": 1,
        "todos_completed": 1,
    }
    assert set(seen["boundary"].values()) == {False}
    assert todo.title not in str(seen)
    assert by_hook["nu.identity_only"]["projection"] is None


def test_projection_that_cannot_be_proven_public_is_not_given_to_the_hook(agent, install):
    install("Proposer")
    TodoFactory(goal=agent.goal, todo_id="t1", segment_ref="/home/alice/private-notes")
    payload = settle().payload
    (dispatch,) = payload["hook_phase"]["dispatches"]
    assert dispatch["failure_code"] == "input_boundary_rejected"
    assert dispatch["failure_reason"] == "input.projection.fact_refs[2]:path"
    assert "alice" not in str(payload)
    assert providers.CALLS == {}
    _primary_unchanged(payload)


def test_phase_ceilings_exhaust_later_hooks_deterministically(todo, install, monkeypatch):
    monkeypatch.setattr(dispatcher, "MAX_HOOKS_PER_PHASE", 2)
    install("Proposer", "SecondProposer", "Inert")
    payload = settle().payload
    hooks = _by_hook(payload)
    assert hooks["alpha.inert"]["status"] == "not_applicable"
    assert hooks["beta.proposer"]["status"] == "accepted"
    assert hooks["gamma.proposer"]["failure_code"] == "dispatch_budget_exhausted"
    assert hooks["gamma.proposer"]["failure_reason"] == "phase:max_hooks"
    assert "gamma.proposer" not in providers.CALLS


def test_wall_time_ceiling_is_reserved_from_declared_budgets(todo, install, monkeypatch):
    # room for one of the two hooks' declared timeouts, not both
    monkeypatch.setattr(dispatcher, "MAX_PHASE_TIMEOUT_MS", providers.ANSWER_TIMEOUT_MS * 3 // 2)
    install("Proposer", "SecondProposer")
    hooks = _by_hook(settle().payload)
    assert hooks["beta.proposer"]["status"] == "accepted"
    assert hooks["gamma.proposer"]["failure_reason"] == "phase:max_wall_time"


def test_rejected_registration_gets_a_failure_receipt_and_no_invocation(todo, install):
    install("WithCommand", "Proposer")
    hooks = _by_hook(settle().payload)
    assert hooks["bad.command"]["failure_code"] == "registration_rejected"
    assert hooks["bad.command"]["failure_reason"] == "registration.command:unknown_field"
    assert hooks["beta.proposer"]["status"] == "accepted"
    assert "bad.command" not in providers.CALLS


def test_event_kind_the_hook_did_not_register_for_gets_no_dispatch(todo, install):
    install("CompletionOnly", "Proposer")
    hooks = _by_hook(settle(event_kind="replan_recorded").payload)
    assert list(hooks) == ["beta.proposer"]
    assert "xi.completion_only" not in providers.CALLS


def test_failed_dispatch_is_retried_with_the_same_identity_within_its_attempts(todo, install):
    install("FlakyOnce")
    first = settle().payload
    (failed,) = first["hook_phase"]["dispatches"]
    assert (failed["status"], failed["attempts"], failed["max_attempts"]) == ("failed", 1, 2)
    again = settle().payload
    (retried,) = again["hook_phase"]["dispatches"]
    assert retried["dispatch_id"] == failed["dispatch_id"]
    assert (retried["status"], retried["attempts"], retried["failure_code"]) == (
        "accepted",
        2,
        None,
    )
    assert again["hook_phase"]["outcomes"][0]["outcome"] == "retried"
    settle()
    assert providers.CALLS["mu.flaky_once"] == 2  # accepted: never invoked again
    assert HookDispatch.objects.count() == 1
    assert HookIntent.objects.count() == 1


def test_retries_stop_at_max_attempts(todo, install):
    install("Raiser")  # max_invocations_per_dispatch = 2
    for _ in range(4):
        settle()
    row = HookDispatch.objects.get()
    assert (row.attempts, row.failure_code) == (2, "producer_failed")
    assert providers.CALLS["delta.raiser"] == 2


def test_same_dispatch_with_a_different_result_is_an_intent_conflict_keeping_the_original(
    todo, install
):
    install("Nondeterministic")
    first = settle().payload
    (original,) = first["hook_phase"]["dispatches"]
    receipt = DurableWritebackReceipt.objects.get()
    hook = registry.installed().hooks[0]
    # A second evaluation of the same dispatch (e.g. a racing dispatcher) proposes v2.
    outcome = dispatcher.evaluate(receipt, hook)
    journalled = services.record_outcome(receipt, outcome)
    assert (journalled.outcome, journalled.code) == ("conflict", "intent_conflict")
    row = HookDispatch.objects.get()
    assert row.result_digest == original["result_digest"]
    assert row.conflict_count == 1
    assert row.last_conflict_digest == outcome.result_digest
    assert [i.payload["variant"] for i in HookIntent.objects.all()] == ["v1"]
    assert (
        documents.dispatches(selectors.receipt_dispatches(receipt))[0]["intent_ids"]
        == original["intent_ids"]
    )


def test_same_dispatch_with_the_same_result_is_a_no_op(todo, install):
    install("Proposer")
    settle()
    receipt = DurableWritebackReceipt.objects.get()
    before = documents.dispatches(selectors.receipt_dispatches(receipt))
    outcome = dispatcher.evaluate(receipt, registry.installed().hooks[0])
    journalled = services.record_outcome(receipt, outcome)
    assert journalled.outcome == "replayed"
    assert documents.dispatches(selectors.receipt_dispatches(receipt)) == before
    assert HookIntent.objects.count() == 1


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda r: r.__setattr__("state", "prepared"), "receipt_not_committed"),
        (lambda r: r.__setattr__("state", "rejected"), "receipt_not_committed"),
        (lambda r: r.__setattr__("effect_id", "eff_other"), "effect_mismatch"),
        (lambda r: r.__setattr__("checkpoint_digest", ""), "checkpoint_not_durable"),
        (lambda r: r.__setattr__("state_revision", "r99"), "checkpoint_not_durable"),
        (lambda r: r.settlement.__setattr__("turn_instance_id", ""), "identity_incomplete"),
        (
            lambda r: r.settlement.__setattr__("post_writeback_hooks_enabled", False),
            "phase_disabled",
        ),
    ],
)
def test_inadmissible_receipt_dispatches_nothing(todo, install, mutate, reason):
    install("Proposer")
    settle(profile="hooks_disabled")
    receipt = DurableWritebackReceipt.objects.select_related(
        "settlement__goal", "settlement__agent", "settlement__todo"
    ).get()
    receipt.settlement.post_writeback_hooks_enabled = True
    assert dispatcher.inadmissible_reason(receipt) is None
    mutate(receipt)
    assert dispatcher.inadmissible_reason(receipt) == reason
    result = services.run_hook_phase(receipt)
    assert result.status in ("not_admissible", "disabled")
    assert providers.CALLS == {}
    assert not HookDispatch.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_hooks_run_after_the_primary_transaction_committed(install):
    from tests.factories import AgentFactory, GoalFactory

    install("CommitProbe")
    agent = AgentFactory(goal=GoalFactory(goal_id="demo"), agent_id="author")
    TodoFactory(goal=agent.goal, todo_id="t1")
    seen, settled = [], threading.Event()

    def watch():  # while the provider runs, look from a connection of this thread
        try:
            while True:  # the probe waits for CHECKED; a settle that ended stops the wait
                done = settled.is_set()
                started = list(providers.CommitProbe.STARTED)
                if started:
                    receipt_id = started[0]["receipt_id"]
                    seen.append(
                        DurableWritebackReceipt.objects.filter(
                            receipt_id=receipt_id, state="committed"
                        ).exists()
                    )
                    return
                if done:
                    return
                time.sleep(0.005)
        finally:
            providers.CommitProbe.CHECKED.set()
            connection.close()

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        payload = settle().payload
    finally:
        settled.set()
    watcher.join()
    assert seen == [True]
    assert payload["hook_phase"]["dispatches"][0]["status"] == "not_applicable"


def test_fresh_batch_falls_back_to_the_per_dispatch_journal_when_a_row_exists(todo, install):
    install("Proposer", "Inert")
    settle()
    receipt = DurableWritebackReceipt.objects.select_related(
        "settlement__goal", "settlement__agent", "settlement__todo"
    ).get()
    HookDispatch.objects.filter(hook_id="alpha.inert").delete()
    from hooks.models import HookPhaseCheckpoint

    HookPhaseCheckpoint.objects.all().delete()
    result = services.run_hook_phase(receipt, fresh=True)
    assert [(o.hook_id, o.outcome) for o in result.outcomes] == [
        ("alpha.inert", "recorded"),
        ("beta.proposer", "replayed"),
    ]
    assert result.dispatches is None
    assert HookDispatch.objects.count() == 2
    assert HookIntent.objects.count() == 1
    assert HookPhaseCheckpoint.objects.count() == 1
