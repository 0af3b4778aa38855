"""Factories and arrange-helpers of the hooks tests."""

import factory
from django.utils import timezone

from hooks import services
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


def settle(todo_id="t1", turn="turn-1", event_kind="todo_completed", execute=True, **kw):
    kw.setdefault("goal_id", "demo")
    kw.setdefault("agent_id", "author")
    return services.settle(
        todo_id=todo_id,
        turn_instance_id=turn,
        event_kind=event_kind,
        execute=execute,
        **kw,
    )
