import pytest

from hooks import isolation
from loopx_site.engines.workers import pool as worker_engine
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


@pytest.fixture(autouse=True)
def _count_invocations(monkeypatch):
    """``providers.INVOKED``: what this process ran and forked, counted on the parent's
    side (a child killed at its timeout before it got the CPU counted nothing)."""
    providers.INVOKED.clear()
    run, spawn = isolation.run, worker_engine._spawn_worker

    def counted_run(provider, input_bytes, *, hook_id, **kwargs):
        produced = run(provider, input_bytes, hook_id=hook_id, **kwargs)
        if produced is not None:
            providers.INVOKED.ran[hook_id] += 1
        return produced

    def counted_spawn(provider, work, key, prepare):
        worker = spawn(provider, work, key, prepare)
        if worker is not None:
            hook_id = getattr(provider, "registration", {}).get("hook_id", "?")
            providers.INVOKED.spawned[hook_id] += 1
        return worker

    monkeypatch.setattr(isolation, "run", counted_run)
    monkeypatch.setattr(worker_engine, "_spawn_worker", counted_spawn)
    yield
    providers.INVOKED.clear()


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
