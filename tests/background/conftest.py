import pytest

from hooks import services as hooks_services
from hooks.models import HookDispatch, HookPhaseCheckpoint
from loopx_site.core import services as core_services

# Reward Memory's arrangements (frozen clock, operator accounts, the provider double).
from tests.reward_memory.conftest import (  # noqa: F401
    _clock_frozen,
    agents,
    authority_rows,
    corpus,
    double_corpus,
)


@pytest.fixture
def eager():
    """Tasks run in the calling process (``task_always_eager``), errors raised."""
    from celery import _state

    import hooks.tasks  # noqa: F401  (registers the tasks on the app)
    import reward_memory.tasks  # noqa: F401
    from loopx_site.celery import app

    # A worker started in this process earlier (under xdist, by another test module) leaves
    # "a join would block" set; an eager task's result is never a blocking join.
    _state._set_task_join_will_block(False)
    # The app reads the CELERY_* settings under their namespaced names.
    before = (app.conf.task_always_eager, app.conf.task_eager_propagates)
    app.conf.update(CELERY_TASK_ALWAYS_EAGER=True, CELERY_TASK_EAGER_PROPAGATES=True)
    yield app
    app.conf.update(CELERY_TASK_ALWAYS_EAGER=before[0], CELERY_TASK_EAGER_PROPAGATES=before[1])


def seed_goal(todos: int = 1) -> None:
    core_services.register_goal(goal_id="demo", agent_ids=["author"])
    for n in range(1, todos + 1):
        hooks_services.add_todo(
            goal_id="demo", todo_id=f"t{n}", title="Private", segment_ref=f"seg-{n}", execute=True
        )


def crashed_settles(n: int) -> list[str]:
    """``n`` settled Todos whose hook phase is lost, as a crash between the primary
    commit and the sidecar journal leaves them (receipt committed, no dispatch, no
    checkpoint); returns their receipt ids."""
    from tests.hooks.factories import settle

    ids = []
    for i in range(1, n + 1):
        result = settle(todo_id=f"t{i}", turn=f"turn-{i}")
        ids.append(result.payload["receipt"]["receipt_id"])
    HookDispatch.objects.all().delete()
    HookPhaseCheckpoint.objects.all().delete()
    return ids
