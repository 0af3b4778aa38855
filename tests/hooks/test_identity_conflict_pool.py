"""Issue 10 item 7: a changed registration is a new dispatch identity (history kept);
``intent_conflict`` is stored and filterable; a bounded per-process worker pool turns
provider exhaustion into ``dispatch_budget_exhausted`` without blocking settlement (with
thread isolation a hung provider keeps its slot; with process isolation it does not)."""

import threading

import pytest
from django.urls import reverse

from hooks import dispatcher, documents, isolation, registry, selectors, services
from hooks.models import DurableWritebackReceipt, HookDispatch, HookIntent, QuotaSpend
from tests.helpers import run_cli
from tests.hooks import providers
from tests.hooks.factories import TodoFactory, rendered_replay, settle


class ProposerV2(providers.Proposer):
    """The same hook id with a changed policy version."""

    policy_version = "proposer_v2"


class ProposerNewContract(providers.Proposer):
    """The same hook id with a changed intent contract."""

    intent_contracts = {
        "beta.note": {
            **providers.note_contract("beta")["beta.note"],
            "operations": ["note", "annotate"],
        }
    }


@pytest.fixture(autouse=True)
def _fresh_registry():
    registry._build.cache_clear()
    yield
    registry._build.cache_clear()


@pytest.mark.parametrize("changed", ["ProposerV2", "ProposerNewContract"])
def test_a_changed_registration_gets_a_new_dispatch_identity_and_keeps_history(
    todo, install, settings, changed
):
    install("Proposer")
    first = settle().payload
    (old,) = first["hook_phase"]["dispatches"]
    receipt = DurableWritebackReceipt.objects.get()
    settings.LOOPX_POST_WRITEBACK_HOOKS = [f"{__name__}.{changed}"]
    new_hook = registry.installed().hooks[0]
    assert new_hook.hook_id == "beta.proposer"
    assert new_hook.registration_digest != old["registration_digest"]
    calls = providers.CALLS["beta.proposer"]
    result = services.run_hook_phase(receipt)
    assert [(o.outcome, o.code) for o in result.outcomes] == [("recorded", None)]
    assert providers.CALLS["beta.proposer"] == calls + 1  # not a replay of the old result
    rows = {d.dispatch_id: d for d in HookDispatch.objects.filter(receipt=receipt)}
    assert len(rows) == 2
    assert old["dispatch_id"] in rows  # the old history is kept, untouched
    assert rows[old["dispatch_id"]].registration_digest == old["registration_digest"]
    new_id = dispatcher.dispatch_id_for(receipt, new_hook)
    assert rows[new_id].registration_digest == new_hook.registration_digest
    assert HookIntent.objects.filter(dispatch__dispatch_id=old["dispatch_id"]).count() == 1
    again = services.run_hook_phase(receipt)
    assert [o.outcome for o in again.outcomes] == ["replayed"]


def test_an_unchanged_registration_keeps_its_dispatch_identity(todo, install):
    install("Proposer")
    (first,) = settle().payload["hook_phase"]["dispatches"]
    registry._build.cache_clear()
    receipt = DurableWritebackReceipt.objects.get()
    assert (
        dispatcher.dispatch_id_for(receipt, registry.installed().hooks[0]) == first["dispatch_id"]
    )


@pytest.fixture
def conflicted(todo, install):
    install("Nondeterministic", "Proposer")
    settle()
    receipt = DurableWritebackReceipt.objects.get()
    flaky = next(h for h in registry.installed().hooks if h.hook_id == "lambda.flaky")
    services.record_outcome(receipt, dispatcher.evaluate(receipt, flaky))
    row = HookDispatch.objects.get(hook_id="lambda.flaky")
    assert (row.status, row.conflict_code, row.conflict_count) == (
        "accepted",
        "intent_conflict",
        1,
    )
    return row


def test_intent_conflict_is_stored_and_filterable_in_the_selector(conflicted):
    listed = documents.dispatch_list(selectors.list_dispatches(failure_code="intent_conflict"))[
        "dispatches"
    ]
    assert [d["dispatch_id"] for d in listed] == [conflicted.dispatch_id]
    assert listed[0]["conflict_code"] == "intent_conflict"
    assert listed[0]["status"] == "accepted"  # the original is kept


def test_intent_conflict_filter_in_the_cli(conflicted):
    out = run_cli("hooks", "dispatches", "--failure-code", "intent_conflict")
    assert out.code == 0
    assert [d["hook_id"] for d in out.json["dispatches"]] == ["lambda.flaky"]


def test_intent_conflict_filter_in_the_api(conflicted, host_client):
    response = host_client("demo").get("/api/v1/hooks/dispatches/?failure_code=intent_conflict")
    assert response.status_code == 200
    assert [d["dispatch_id"] for d in response.json()["dispatches"]] == [conflicted.dispatch_id]


def test_intent_conflict_filter_in_the_admin(conflicted, admin_client):
    url = reverse("admin:hooks_hookdispatch_changelist")
    page = admin_client.get(url, {"failure_code": "intent_conflict"}).content.decode()
    assert conflicted.dispatch_id in page
    other = HookDispatch.objects.get(hook_id="beta.proposer")
    assert other.dispatch_id not in page


# -- the bounded worker pool (real threads) ----------------------------------------------------
def test_an_exhausted_pool_fails_later_hooks_without_blocking_settlement(agent, install, settings):
    settings.LOOPX_HOOK_ISOLATION = "thread"  # the thread model cannot stop a hung provider
    settings.LOOPX_HOOK_WORKERS = 1
    install("Sleeper", "Proposer")
    TodoFactory(goal=agent.goal, todo_id="t1", segment_ref="seg-1")
    TodoFactory(goal=agent.goal, todo_id="t2", segment_ref="seg-1")
    pool = isolation.worker_pool()
    try:
        # beta.proposer runs first and frees its slot; epsilon.sleeper then times out
        # and keeps the only slot while its abandoned thread is still running.
        first = settle("t1", "turn-1").payload
        codes = {d["hook_id"]: d["failure_code"] for d in first["hook_phase"]["dispatches"]}
        assert codes == {"beta.proposer": None, "epsilon.sleeper": "producer_timed_out"}
        assert pool.busy == 1
        second = settle("t2", "turn-2")
        assert second.status == "committed"  # the settlement never waited for a slot
        rows = {d["hook_id"]: d for d in second.payload["hook_phase"]["dispatches"]}
        assert rows["beta.proposer"]["failure_code"] == "dispatch_budget_exhausted"
        assert rows["beta.proposer"]["failure_reason"] == "process:worker_pool_exhausted"
        assert rows["epsilon.sleeper"]["failure_code"] == "dispatch_budget_exhausted"
        assert QuotaSpend.objects.count() == 2
        assert providers.INVOKED.ran["epsilon.sleeper"] == 1  # no pile-up of abandoned threads
    finally:
        providers.RELEASE.set()
    _wait_until_idle(pool)
    receipt = DurableWritebackReceipt.objects.get(settlement__turn_instance_id="turn-2")
    providers.RELEASE.clear()
    settings.LOOPX_POST_WRITEBACK_HOOKS = [providers.P + "Proposer"]
    retried = services.run_hook_phase(receipt)
    assert [(o.hook_id, o.outcome) for o in retried.outcomes] == [("beta.proposer", "retried")]
    assert HookDispatch.objects.get(receipt=receipt, hook_id="beta.proposer").status == "accepted"


def test_a_killed_provider_frees_its_slot_so_later_hooks_run(agent, install, settings):
    settings.LOOPX_HOOK_WORKERS = 1
    install("Sleeper", "Proposer")
    TodoFactory(goal=agent.goal, todo_id="t1", segment_ref="seg-1")
    TodoFactory(goal=agent.goal, todo_id="t2", segment_ref="seg-1")
    pool = isolation.worker_pool()
    for todo_id, turn in (("t1", "turn-1"), ("t2", "turn-2")):
        payload = settle(todo_id, turn).payload
        codes = {d["hook_id"]: d["failure_code"] for d in payload["hook_phase"]["dispatches"]}
        assert codes == {"beta.proposer": None, "epsilon.sleeper": "producer_timed_out"}
        _wait_until_idle(pool)  # the sleeper's child was killed and reaped
    assert providers.CALLS["beta.proposer"] == 2
    # counted here, not in the child: the sleeper's child may be killed before it runs
    assert providers.INVOKED.ran == {"beta.proposer": 2, "epsilon.sleeper": 2}
    assert not HookDispatch.objects.filter(failure_code="dispatch_budget_exhausted").exists()


def _wait_until_idle(pool, timeout=60.0):
    """Returns as soon as every slot is free; the bound only ends a broken run."""
    done = threading.Event()
    for _ in range(int(timeout * 20)):
        if pool.busy == 0:
            done.set()
            break
        threading.Event().wait(0.05)
    assert done.is_set()


def test_the_pool_bounds_live_provider_threads_under_concurrent_starts():
    pool = isolation.WorkerPool(3)
    release = threading.Event()
    started = []
    barrier = threading.Barrier(10)
    results = []

    def attempt():
        barrier.wait(5)
        results.append(pool.try_start(release.wait, name="t"))

    threads = [threading.Thread(target=attempt) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    started = [r for r in results if r is not None]
    assert len(started) == 3
    assert pool.busy == 3
    release.set()
    for t in started:
        t.join(5)
    assert pool.busy == 0
    assert pool.try_start(lambda: None, name="t") is not None


class SingleShotProposer(providers.Proposer):
    registration = providers.registration(
        "beta.proposer", budget={"max_invocations_per_dispatch": 1}
    )


def test_pool_exhaustion_is_not_an_attempt_and_replay_runs_the_hook(todo, install, settings):
    settings.LOOPX_HOOK_WORKERS = 1
    settings.LOOPX_POST_WRITEBACK_HOOKS = [f"{__name__}.SingleShotProposer"]
    pool = isolation.worker_pool()
    hold = threading.Event()
    holder = pool.try_start(lambda: hold.wait(10), name="holder")  # a busy worker
    assert holder is not None
    try:
        (row,) = settle().payload["hook_phase"]["dispatches"]
        assert (row["failure_code"], row["attempts"], row["max_attempts"]) == (
            "dispatch_budget_exhausted",
            0,
            1,
        )
        assert providers.CALLS["beta.proposer"] == 0
    finally:
        hold.set()
        holder.join(5)
    receipt = DurableWritebackReceipt.objects.get()
    retried = services.run_hook_phase(receipt)
    assert [o.outcome for o in retried.outcomes] == ["retried"]
    dispatch = HookDispatch.objects.get()
    assert (dispatch.status, dispatch.attempts) == ("accepted", 1)
    assert providers.CALLS["beta.proposer"] == 1


def test_hooks_replay_finds_and_runs_a_pool_exhausted_dispatch(todo, install, settings):
    settings.LOOPX_HOOK_WORKERS = 1
    settings.LOOPX_POST_WRITEBACK_HOOKS = [f"{__name__}.SingleShotProposer"]
    pool = isolation.worker_pool()
    hold = threading.Event()
    holder = pool.try_start(lambda: hold.wait(10), name="holder")
    try:
        settle()
    finally:
        hold.set()
        holder.join(5)
    replayed = rendered_replay(execute=True)
    assert [r["reason"] for r in replayed["receipts"]] == ["retryable_failure"]
    assert replayed["receipts"][0]["dispatches"][0]["status"] == "accepted"
