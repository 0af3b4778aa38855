"""Factories and arrange-helpers of the hooks tests."""

from dataclasses import dataclass

import factory
from django.utils import timezone

from hooks import documents, services
from hooks.models import Todo
from tests.factories import GoalFactory


class TodoFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Todo
        django_get_or_create = ("goal", "todo_id")

    goal = factory.SubFactory(GoalFactory)
    todo_id = factory.Sequence(lambda n: f"todo-{n}")
    title = factory.Sequence(lambda n: f"Private task prose number {n}")
    segment_ref = ""
    created_at = factory.LazyFunction(timezone.now)
    updated_at = factory.LazyFunction(timezone.now)


@dataclass(frozen=True)
class Settled:
    """A settlement as an adapter answers it: the service's result and its document."""

    result: services.settlement.SettleResult
    payload: dict

    @property
    def status(self) -> str:
        return self.result.status


def settle(todo_id="t1", turn="turn-1", event_kind="todo_completed", execute=True, **kw):
    """``services.settle`` with the demo Goal and Agent, rendered as the adapters do."""
    kw.setdefault("goal_id", "demo")
    kw.setdefault("agent_id", "author")
    result = services.settle(
        todo_id=todo_id,
        turn_instance_id=turn,
        event_kind=event_kind,
        execute=execute,
        **kw,
    )
    return Settled(result, documents.settle_result(result))


def rendered_replay(**kw) -> dict:
    """``services.replay`` rendered as the adapters do (``loopx_post_writeback_replay_v0``)."""
    return documents.replay_outcome(services.replay(**kw))


def rendered_execution(**kw) -> dict:
    """``services.execute_intents`` rendered as the adapters do."""
    return documents.execution_run(services.execute_intents(**kw))
