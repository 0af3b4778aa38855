import pytest

from loopx_site.core import services as core_services
from preferences import services

OWNER = {"source_ref": "owner-message-1", "source_quote": "Use the designated reviewer."}


@pytest.fixture
def scope(db):
    """Goal ``demo`` with Agents ``author`` and ``reviewer``; returns (goal_id, agent_id)."""
    core_services.register_goal(
        goal_id="demo", agent_ids=["author", "reviewer"], state_ref="goals/demo/state.json"
    )
    return "demo", "author"


@pytest.fixture
def remember(scope):
    """``remember(key, statement, expected, op, **kw)`` committing in the demo scope."""

    def call(
        key="review.collaboration",
        statement="Ask the designated reviewer before merging.",
        expected="none",
        operation_id="preference-1",
        execute=True,
        goal_id="demo",
        agent_id="author",
        **kwargs,
    ):
        kwargs = {**OWNER, **kwargs}
        return services.remember(
            goal_id=goal_id,
            agent_id=agent_id,
            key=key,
            statement=statement,
            expected_revision=expected,
            operation_id=operation_id,
            execute=execute,
            **kwargs,
        )

    return call


@pytest.fixture
def retire(scope):
    def call(
        key="review.collaboration",
        expected="1",
        operation_id="retire-1",
        execute=True,
        source_ref="owner-message-2",
        source_quote="Forget my review preference.",
        goal_id="demo",
        agent_id="author",
    ):
        return services.retire(
            goal_id=goal_id,
            agent_id=agent_id,
            key=key,
            source_ref=source_ref,
            source_quote=source_quote,
            expected_revision=expected,
            operation_id=operation_id,
            execute=execute,
        )

    return call
