import pytest

from tests.hooks import providers
from tests.hooks.factories import TodoFactory

PERIODIC = "hooks.capabilities.periodic_report.PeriodicReportRuntimeTrigger"


@pytest.fixture(autouse=True)
def _reset_providers(tmp_path, monkeypatch):
    """A fresh cross-process state directory for the test providers (inherited by the
    children they run in)."""
    monkeypatch.setenv(providers.STATE_ENV, str(tmp_path / "hook-state"))
    yield
    providers.RELEASE.set()  # let any abandoned sleeper (thread isolation) finish


@pytest.fixture
def install(settings):
    """``install("Proposer", "Raiser", ...)`` sets the composition root's hook list.

    Names without a dot are classes of ``tests.hooks.providers``."""

    def _install(*names: str) -> None:
        settings.LOOPX_POST_WRITEBACK_HOOKS = [n if "." in n else providers.P + n for n in names]

    return _install


@pytest.fixture
def todo(agent):
    """Todo ``t1`` of Goal ``demo`` in segment ``seg-1`` (alone, so completing it
    completes the segment)."""
    return TodoFactory(goal=agent.goal, todo_id="t1", segment_ref="seg-1")
