import pytest

from loopx_site.core import clock
from reward_memory import providers
from reward_memory.providers.double import ProviderDouble
from tests.factories import AgentFactory
from tests.reward_memory import factories as f


@pytest.fixture(autouse=True)
def frozen_clock(monkeypatch):
    """Services read ``clock.now()``; tests run at a fixed instant (movable)."""
    state = {"now": f.NOW}
    monkeypatch.setattr(clock, "now", lambda: state["now"])

    class Clock:
        def set(self, value):
            state["now"] = value

        def advance(self, delta):
            state["now"] = state["now"] + delta

        @property
        def now(self):
            return state["now"]

    return Clock()


@pytest.fixture
def double():
    """A provider double installed as provider ``double`` for the test."""
    with providers.use("double", ProviderDouble()) as provider:
        yield provider


@pytest.fixture
def agents(agent):
    """Goal ``demo`` with Agents ``author`` and ``reviewer``."""
    return agent, AgentFactory(goal=agent.goal, agent_id="reviewer")


@pytest.fixture
def corpus(agents):
    """A soft_preference corpus on the local provider, allowlisting demo/author."""
    return f.register("prefs", agents=[("demo", "author")])


@pytest.fixture
def double_corpus(agents, double):
    """The same corpus contract bound to the provider double."""
    return f.register("prefs", provider_id="double", agents=[("demo", "author")])
