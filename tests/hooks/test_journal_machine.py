"""A hypothesis state machine over settle / replay / crash / executor operations.

Invariants after every step: one settlement, receipt and quota spend per Turn; at most
one dispatch per (receipt, hook); every intent id is derived from its dispatch; a
receipt with a checkpoint has a dispatch for every admitted hook; decided intents have
exactly one execution record.
"""

import pytest
from django.db import transaction
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from hooks import contracts, services
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
from loopx_site.core import services as core_services
from loopx_site.core.errors import DomainError

TODOS = ["t0", "t1", "t2", "t3"]


class JournalMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self._atomic = transaction.atomic()
        self._atomic.__enter__()
        core_services.register_goal(goal_id="demo", agent_ids=["author"])
        for i, todo_id in enumerate(TODOS):
            services.add_todo(
                goal_id="demo", todo_id=todo_id, title="x", segment_ref=f"seg-{i % 2}", execute=True
            )
        self.turns = 0
        self.committed: dict[str, str] = {}  # turn -> receipt_id

    def teardown(self):
        transaction.set_rollback(True)
        self._atomic.__exit__(None, None, None)

    @rule(todo=st.sampled_from(TODOS), kind=st.sampled_from(contracts.EVENT_KINDS))
    def settle_new_turn(self, todo, kind):
        self.turns += 1
        turn = f"turn-{self.turns}"
        kwargs = {
            "goal_id": "demo",
            "agent_id": "author",
            "todo_id": todo,
            "turn_instance_id": turn,
            "event_kind": kind,
            "execute": True,
        }
        if Todo.objects.get(todo_id=todo).state == "completed":
            with pytest.raises(DomainError) as caught:
                services.settle(**kwargs)
            assert caught.value.code == "todo_not_open"
            return
        result = services.settle(**kwargs)
        assert result.status == "committed"
        self.committed[turn] = result.receipt.receipt_id

    @rule(data=st.data())
    def replay_a_settlement(self, data):
        if not self.committed:
            return
        turn = data.draw(st.sampled_from(sorted(self.committed)))
        settlement = TurnSettlement.objects.select_related("todo").get(turn_instance_id=turn)
        before = DurableWritebackReceipt.objects.get(settlement=settlement).checkpoint_digest
        result = services.settle(
            goal_id="demo",
            agent_id="author",
            todo_id=settlement.todo.todo_id,
            turn_instance_id=turn,
            event_kind=settlement.event_kind,
            execute=True,
        )
        assert result.status == "replayed"
        assert result.receipt.receipt_id == self.committed[turn]
        assert result.receipt.checkpoint_digest == before

    @rule()
    def crash_the_sidecar(self):
        """Lose every sidecar row of the latest receipt (as if killed before it)."""
        receipt = DurableWritebackReceipt.objects.order_by("-pk").first()
        if (
            receipt is not None
            and not IntentExecution.objects.filter(intent__dispatch__receipt=receipt).exists()
        ):
            HookDispatch.objects.filter(receipt=receipt).delete()
            HookPhaseCheckpoint.objects.filter(receipt=receipt).delete()

    @rule()
    def replay_hooks(self):
        services.replay(execute=True)

    @rule()
    def run_executor(self):
        services.execute_intents(executor="fake-scheduler", execute=True, limit=2)

    @invariant()
    def one_primary_record_per_turn(self):
        assert TurnSettlement.objects.count() == len(self.committed)
        assert DurableWritebackReceipt.objects.count() == len(self.committed)
        assert QuotaSpend.objects.count() == len(self.committed)

    @invariant()
    def sidecar_identities_are_unique_and_derived(self):
        for intent in HookIntent.objects.select_related("dispatch"):
            assert intent.intent_id == contracts.intent_id(
                dispatch_id=intent.dispatch.dispatch_id,
                intent_kind=intent.intent_kind,
                policy_version=intent.policy_version,
                payload=intent.payload,
            )
        for dispatch in HookDispatch.objects.select_related("receipt"):
            assert dispatch.dispatch_id == contracts.dispatch_id(
                receipt_id=dispatch.receipt.receipt_id,
                hook_id=dispatch.hook_id,
                registration_schema_version=dispatch.registration_schema_version,
                event_kind=dispatch.event_kind,
                registration_digest=dispatch.registration_digest,
            )
        for checkpoint in HookPhaseCheckpoint.objects.all():
            recorded = set(
                HookDispatch.objects.filter(receipt=checkpoint.receipt_id).values_list(
                    "dispatch_id", flat=True
                )
            )
            assert set(checkpoint.dispatch_ids) <= recorded

    @invariant()
    def decided_intents_have_one_execution(self):
        decided = HookIntent.objects.exclude(status="pending").count()
        assert IntentExecution.objects.count() == decided


@pytest.mark.django_db
def test_journal_state_machine():
    runner = JournalMachine.TestCase
    runner.settings = settings(
        max_examples=15,
        stateful_step_count=12,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    runner().runTest()
