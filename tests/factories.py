"""factory-boy factories for the registry; apps add theirs in their own modules."""

import factory
from django.utils import timezone

from loopx_site.core.models import Agent, Goal


class GoalFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Goal
        django_get_or_create = ("goal_id",)

    goal_id = factory.Sequence(lambda n: f"goal-{n}")
    state_ref = factory.LazyAttribute(lambda o: f"goals/{o.goal_id}/state.json")
    instance_id = ""
    created_at = factory.LazyFunction(timezone.now)
    updated_at = factory.LazyFunction(timezone.now)


class AgentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Agent
        django_get_or_create = ("goal", "agent_id")

    goal = factory.SubFactory(GoalFactory)
    agent_id = factory.Sequence(lambda n: f"agent-{n}")
    created_at = factory.LazyFunction(timezone.now)
