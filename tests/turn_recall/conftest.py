import pytest

from tests.factories import AgentFactory
from tests.hooks.factories import TodoFactory
from tests.reward_memory import factories as rmf
from turn_recall import contracts as c
from turn_recall import quota

SURFACE = c.SURFACE


@pytest.fixture(autouse=True)
def _clock_frozen(frozen_clock):
    """Every test here runs at the frozen instant (``frozen_clock``, tests/conftest.py)."""


@pytest.fixture
def todo(agent):
    return TodoFactory(
        goal=agent.goal, todo_id="t1", title="Fix the flaky test", segment_ref="seg-1"
    )


@pytest.fixture
def turn_corpus(agent, double):
    """The operator binding that switches turn recall on for demo/author."""

    from reward_memory import services

    AgentFactory(goal=agent.goal, agent_id="reviewer")
    rmf.operator_accounts()  # the owner grants the role checkpoint below
    # the events' source (user:maint-1) holds ``maintainer`` through an operator record
    services.grant_checkpoint(
        checkpoint_id=rmf.ROLE_CHECKPOINT_ID,
        project=rmf.PROJECT,
        actor="user:maint-1",
        role="maintainer",
        action_scopes=[],
        operator=rmf.op(rmf.OWNER),
        execute=True,
    )
    return rmf.register(
        "turns", provider_id="double", surfaces=[SURFACE], agents=[("demo", "author")]
    )


def remember_guidance(summary: str, event_id: str = "ev-1", **overrides) -> dict:
    """Activate one turn-admission record through the real ingest pipeline."""

    receipt = rmf.ingested(
        event=rmf.scoped_event(
            event_id,
            corpus_id="turns",
            content_summary=summary,
            scope={"surface": SURFACE},
            **overrides,
        ),
        goal_id="demo",
        agent_id="author",
        execute=True,
    )
    return receipt


def packet(goal_id="demo", agent_id="author") -> dict:
    return quota.should_run(goal_id=goal_id, agent_id=agent_id)
