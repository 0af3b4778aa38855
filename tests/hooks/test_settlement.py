import datetime as dt

import pytest
from django.db import DatabaseError, IntegrityError, transaction

from hooks import contracts, registry, selectors, services
from hooks.models import (
    DurableWritebackReceipt,
    HookDispatch,
    HookIntent,
    HookPhaseCheckpoint,
    IntentExecution,
    QuotaSpend,
    Todo,
    TurnSettlement,
)
from loopx_site.core.canonical import canonical_bytes
from loopx_site.core.errors import DomainError
from tests.factories import AgentFactory, GoalFactory
from tests.hooks import providers
from tests.hooks.factories import TodoFactory, rendered_execution, rendered_replay, settle

FROZEN = dt.datetime(2026, 8, 26, 12, 0, 0, tzinfo=dt.UTC)


# -- Todos ----------------------------------------------------------------------------------
def test_add_todo_is_idempotent_and_conflicts_on_different_content(goal):
    first = services.add_todo(
        goal_id="demo", todo_id="t1", title="Write", segment_ref="s1", execute=True
    )
    again = services.add_todo(
        goal_id="demo", todo_id="t1", title="Write", segment_ref="s1", execute=True
    )
    assert (first.created, again.created) == (True, False)
    with pytest.raises(DomainError) as caught:
        services.add_todo(
            goal_id="demo", todo_id="t1", title="Other", segment_ref="s1", execute=True
        )
    assert caught.value.code == "todo_conflict"
    assert caught.value.http_status == 409
    assert Todo.objects.count() == 1


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"todo_id": "bad id", "title": "x"}, "todo_id"),
        ({"todo_id": "t", "title": ""}, "title"),
        ({"todo_id": "t", "title": "x" * 501}, "title"),
        ({"todo_id": "t", "title": "line\nbreak"}, "title"),
        ({"todo_id": "t", "title": "x", "segment_ref": "a\x00b"}, "segment_ref"),
        ({"todo_id": "t", "title": "x", "segment_ref": "s" * 257}, "segment_ref"),
    ],
)
def test_add_todo_rejects_malformed_input_and_writes_nothing(goal, kwargs, field):
    with pytest.raises(DomainError) as caught:
        services.add_todo(goal_id="demo", **kwargs, execute=True)
    assert (caught.value.code, caught.value.field) == ("invalid_argument", field)
    assert caught.value.envelope()["schema_version"] == "post_writeback_hook_error_v0"
    assert not Todo.objects.exists()


def test_add_todo_to_unknown_goal_is_404(db):
    with pytest.raises(DomainError) as caught:
        services.add_todo(goal_id="nope", todo_id="t", title="x", execute=True)
    assert caught.value.code == "goal_not_registered"


def test_add_todo_previews_by_default_with_every_check_and_writes_nothing(goal):
    preview = services.add_todo(goal_id="demo", todo_id="t1", title="Write", segment_ref="s1")
    assert (preview.status, preview.created, preview.todo.pk) == ("preview", False, None)
    assert not Todo.objects.exists()
    services.add_todo(goal_id="demo", todo_id="t1", title="Write", execute=True)
    with pytest.raises(DomainError) as caught:  # the conflict a commit would hit
        services.add_todo(goal_id="demo", todo_id="t1", title="Other")
    assert caught.value.code == "todo_conflict"
    same = services.add_todo(goal_id="demo", todo_id="t1", title="Write")
    assert (same.status, same.created) == ("preview", False)
    assert Todo.objects.count() == 1


def test_list_todos_in_creation_order(goal):
    services.add_todo(goal_id="demo", todo_id="b", title="B", execute=True)
    services.add_todo(goal_id="demo", todo_id="a", title="A", execute=True)
    assert [t.todo_id for t in selectors.list_todos("demo")] == ["b", "a"]


# -- preview ----------------------------------------------------------------------------------
def test_settle_preview_writes_nothing_and_invokes_no_provider(todo, install):
    install("Proposer")
    result = settle(execute=False)
    assert result.status == "preview"
    assert result.payload["receipt"]["state"] == "prepared"
    planned = result.payload["hook_phase"]["planned"]
    assert [p["hook_id"] for p in planned] == ["beta.proposer"]
    assert planned[0]["dispatch_id"] == contracts.dispatch_id(
        receipt_id=result.payload["receipt"]["receipt_id"],
        hook_id="beta.proposer",
        registration_schema_version=contracts.REGISTRATION_SCHEMA,
        event_kind="todo_completed",
        registration_digest=registry.installed().hooks[0].registration_digest,
    )
    assert not TurnSettlement.objects.exists()
    assert not DurableWritebackReceipt.objects.exists()
    assert Todo.objects.get().state == "open"
    assert providers.CALLS == {}


def test_preview_ids_equal_the_committed_ids(todo, install):
    install("Proposer")
    preview = settle(execute=False).payload
    committed = settle().payload
    assert preview["receipt"]["receipt_id"] == committed["receipt"]["receipt_id"]
    assert [p["dispatch_id"] for p in preview["hook_phase"]["planned"]] == [
        d["dispatch_id"] for d in committed["hook_phase"]["dispatches"]
    ]


# -- the primary writeback --------------------------------------------------------------------
def test_execute_commits_todo_change_receipt_checkpoint_and_quota_spend_together(todo):
    result = settle()
    assert result.status == "committed"
    receipt = DurableWritebackReceipt.objects.get()
    assert receipt.state == "committed"
    assert receipt.receipt_id == result.payload["receipt"]["receipt_id"]
    assert receipt.checkpoint_digest == result.payload["receipt"]["checkpoint_digest"]
    assert receipt.state_revision == "r2"
    todo.refresh_from_db()
    assert (todo.state, todo.revision) == ("completed", 2)
    spend = QuotaSpend.objects.get()
    assert spend.receipt == receipt
    assert result.payload["quota_spend"]["eligibility"]["eligible"] is True


def test_replan_keeps_the_todo_open_and_counts_the_replan(todo):
    settle(event_kind="replan_recorded")
    todo.refresh_from_db()
    assert (todo.state, todo.replan_count, todo.revision) == ("open", 1, 2)
    assert DurableWritebackReceipt.objects.get().event_facts["transition"] == "replan_recorded"


def test_replaying_the_same_settlement_returns_the_same_receipt_and_dispatches(todo, install):
    install("Proposer", "Inert")
    first = settle().payload
    again = settle().payload
    assert again["status"] == "replayed"
    assert again["receipt"] == first["receipt"]
    assert again["quota_spend"] == first["quota_spend"]
    assert again["hook_phase"]["dispatches"] == first["hook_phase"]["dispatches"]
    assert [o["outcome"] for o in again["hook_phase"]["outcomes"]] == ["replayed", "replayed"]
    assert providers.CALLS == {"alpha.inert": 1, "beta.proposer": 1}
    assert HookIntent.objects.count() == 1
    assert TurnSettlement.objects.count() == 1


def test_same_turn_instance_with_different_todo_or_event_is_a_conflict(todo, agent):
    TodoFactory(goal=agent.goal, todo_id="t2")
    settle()
    for kwargs in ({"todo_id": "t2"}, {"event_kind": "replan_recorded"}):
        with pytest.raises(DomainError) as caught:
            settle(**kwargs)
        assert caught.value.code == "settlement_conflict"
        assert caught.value.http_status == 409
    with pytest.raises(DomainError) as caught:
        settle(profile="hooks_disabled")
    assert caught.value.code == "settlement_conflict"
    assert TurnSettlement.objects.count() == 1


def test_completing_a_completed_todo_fails_primary_validation_and_dispatches_nothing(todo, install):
    install("Proposer")
    settle()
    providers.CALLS.clear()
    with pytest.raises(DomainError) as caught:
        settle(turn="turn-2")
    assert caught.value.code == "todo_not_open"
    assert providers.CALLS == {}
    assert TurnSettlement.objects.count() == 1
    assert HookDispatch.objects.count() == 1


@pytest.mark.parametrize(
    ("kwargs", "code", "field"),
    [
        ({"goal_id": "bad goal"}, "invalid_argument", "goal_id"),
        ({"turn": "bad turn"}, "invalid_argument", "turn_instance_id"),
        ({"event_kind": "todo_deleted"}, "invalid_argument", "event_kind"),
        ({"profile": "turbo"}, "invalid_argument", "profile"),
        ({"todo_id": "missing"}, "todo_not_found", "todo_id"),
        ({"agent_id": "ghost"}, "agent_not_registered", "agent_id"),
        ({"goal_id": "ghost"}, "goal_not_registered", "goal_id"),
    ],
)
def test_bad_settle_input_is_a_structured_error_with_nothing_written(todo, kwargs, code, field):
    with pytest.raises(DomainError) as caught:
        settle(**kwargs)
    assert (caught.value.code, caught.value.field) == (code, field)
    assert not TurnSettlement.objects.exists()


def test_same_agent_name_in_another_goal_settles_independently(todo, agent):
    other = AgentFactory(goal=GoalFactory(goal_id="other"), agent_id="author")
    TodoFactory(goal=other.goal, todo_id="t1")
    a = settle().payload["receipt"]["receipt_id"]
    b = settle(goal_id="other").payload["receipt"]["receipt_id"]
    assert a != b
    assert TurnSettlement.objects.count() == 2


def test_primary_writeback_failure_rolls_back_everything_and_dispatches_nothing(
    todo, install, monkeypatch
):
    install("Proposer")

    def broken(*args, **kwargs):
        raise DatabaseError("disk full")

    monkeypatch.setattr(QuotaSpend.objects, "create", broken)
    with pytest.raises(DatabaseError):
        settle()
    assert not TurnSettlement.objects.exists()
    assert not DurableWritebackReceipt.objects.exists()
    todo.refresh_from_db()
    assert (todo.state, todo.revision) == ("open", 1)
    assert providers.CALLS == {}
    assert not HookDispatch.objects.exists()


def test_hook_phase_failure_of_the_sidecar_database_leaves_primary_committed(
    todo, install, monkeypatch
):
    install("Proposer")
    from hooks.services import phase

    def broken(*args, **kwargs):
        raise DatabaseError("sidecar down")

    monkeypatch.setattr(phase, "record_outcome", broken)
    monkeypatch.setattr(phase, "_insert_batch", broken)
    result = settle()
    assert result.status == "committed"
    assert result.payload["hook_phase"]["status"] == "deferred"
    assert DurableWritebackReceipt.objects.get().state == "committed"
    assert QuotaSpend.objects.count() == 1
    assert not HookPhaseCheckpoint.objects.exists()
    monkeypatch.undo()
    recovered = rendered_replay(execute=True)
    assert recovered["receipts"][0]["reason"] == "missing_checkpoint"
    assert HookDispatch.objects.get().status == "accepted"


# -- byte identity of primary receipt and quota spend eligibility -----------------------------
def _fresh_primary(monkeypatch, profile=None) -> tuple[bytes, bytes, bytes]:
    TurnSettlement.objects.all().delete()
    Todo.objects.update(state="open", revision=1, completed_at=None, replan_count=0)
    monkeypatch.setattr("loopx_site.core.clock.now", lambda: FROZEN)
    payload = settle(profile=profile).payload
    receipt = DurableWritebackReceipt.objects.get()
    todo = Todo.objects.values("state", "revision", "completed_at").get()
    return (
        canonical_bytes(payload["receipt"]),
        canonical_bytes(
            {
                "spend": payload["quota_spend"],
                "eligibility": selectors.quota_spend_eligibility(receipt),
                "todo": str(todo),
            }
        ),
        canonical_bytes(payload["hook_phase"]["status"]),
    )


def test_receipt_and_quota_eligibility_are_byte_identical_whether_hooks_are_off_ok_or_failing(
    todo, install, monkeypatch
):
    install("Proposer")
    disabled = _fresh_primary(monkeypatch, profile="hooks_disabled")
    succeeded = _fresh_primary(monkeypatch)
    assert HookDispatch.objects.get().status == "accepted"
    install("Raiser", "Sleeper", "Malformed")
    failed = _fresh_primary(monkeypatch)
    assert set(HookDispatch.objects.values_list("status", flat=True)) == {"failed"}
    assert disabled[0] == succeeded[0] == failed[0]
    assert disabled[1] == succeeded[1] == failed[1]
    phases = (disabled[2], succeeded[2], failed[2])
    assert phases == (b'"disabled"', b'"dispatched"', b'"dispatched"')


# -- named constraints ----------------------------------------------------------------------
def _committed(todo):
    settle()
    return DurableWritebackReceipt.objects.select_related("settlement").get()


def _raises_integrity(fn):
    with pytest.raises(IntegrityError), transaction.atomic():
        fn()


def test_todo_constraints(todo):
    _raises_integrity(
        lambda: Todo.objects.create(
            goal=todo.goal, todo_id="t1", title="x", created_at=FROZEN, updated_at=FROZEN
        )
    )
    _raises_integrity(lambda: Todo.objects.filter(pk=todo.pk).update(state="archived"))
    _raises_integrity(lambda: Todo.objects.filter(pk=todo.pk).update(state="completed"))


def test_settlement_and_receipt_constraints(todo):
    receipt = _committed(todo)
    s = receipt.settlement
    _raises_integrity(
        lambda: TurnSettlement.objects.create(
            goal=s.goal,
            agent=s.agent,
            todo=s.todo,
            turn_instance_id=s.turn_instance_id,
            event_kind="todo_completed",
            effect_id="eff_other",
            created_at=FROZEN,
        )
    )
    _raises_integrity(
        lambda: TurnSettlement.objects.filter(pk=s.pk).update(event_kind="todo_deleted")
    )
    _raises_integrity(
        lambda: DurableWritebackReceipt.objects.create(
            receipt_id="dwr_other",
            settlement=s,
            effect_id=s.effect_id,
            event_kind="todo_completed",
            state="prepared",
            state_revision="r9",
            created_at=FROZEN,
        )
    )
    _raises_integrity(
        lambda: DurableWritebackReceipt.objects.filter(pk=receipt.pk).update(state="inferred")
    )
    _raises_integrity(
        lambda: DurableWritebackReceipt.objects.filter(pk=receipt.pk).update(committed_at=None)
    )
    _raises_integrity(
        lambda: QuotaSpend.objects.create(
            spend_id="qsp_other", receipt=receipt, goal=s.goal, agent=s.agent, spent_at=FROZEN
        )
    )
    _raises_integrity(lambda: QuotaSpend.objects.update(units=0))


def test_journal_constraints(todo, install):
    install("Proposer")
    receipt = _committed(todo)
    dispatch = HookDispatch.objects.get()
    intent = HookIntent.objects.get()
    _raises_integrity(lambda: HookDispatch.objects.filter(pk=dispatch.pk).update(status="done"))
    _raises_integrity(lambda: HookDispatch.objects.filter(pk=dispatch.pk).update(status="failed"))
    _raises_integrity(
        lambda: HookDispatch.objects.filter(pk=dispatch.pk).update(failure_code="producer_failed")
    )
    fields = {
        f.name: getattr(dispatch, f.name)
        for f in HookDispatch._meta.fields
        if f.name not in ("id",)
    }
    _raises_integrity(lambda: HookDispatch.objects.create(**fields))
    intent_fields = {
        f.name: getattr(intent, f.name) for f in HookIntent._meta.fields if f.name != "id"
    }
    _raises_integrity(lambda: HookIntent.objects.create(**intent_fields))
    _raises_integrity(
        lambda: HookIntent.objects.create(**{**intent_fields, "intent_id": "pwi_other"})
    )
    _raises_integrity(lambda: HookIntent.objects.filter(pk=intent.pk).update(status="sent"))
    HookPhaseCheckpoint.objects.get(receipt=receipt)
    _raises_integrity(
        lambda: HookPhaseCheckpoint.objects.create(
            receipt=receipt, registry_digest="x", completed_at=FROZEN
        )
    )
    rendered_execution(executor="fake-scheduler", execute=True)
    execution = IntentExecution.objects.get()  # beta.* is not on its allowlist: rejected
    assert (execution.admission, execution.reason) == ("rejected", "intent_kind_not_allowlisted")
    _raises_integrity(
        lambda: IntentExecution.objects.create(
            intent=intent, executor_id="fake-scheduler", admission="admitted", recorded_at=FROZEN
        )
    )
    _raises_integrity(
        lambda: IntentExecution.objects.filter(pk=execution.pk).update(admission="maybe")
    )
