import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from loopx_site.core import clock
from loopx_site.core import services as core_services
from tests.factories import AgentFactory, GoalFactory


@pytest.fixture(autouse=True)
def _fresh_throttle_counters():
    """Each test starts with zero throttle counts: the cache store is cleared here; the
    database store's rows (``core_throttlecounter``) are written in the test's own
    transaction or flushed after a transactional test, like every other row."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def goal(db):
    return GoalFactory(goal_id="demo")


@pytest.fixture
def agent(goal):
    return AgentFactory(goal=goal, agent_id="author")


@pytest.fixture
def api_client():
    return APIClient()


@pytest.fixture
def host_client(db):
    """``host_client(goal_id, agent_id=None)`` → an APIClient holding a scoped token."""

    def make(goal_id: str, agent_id: str | None = None) -> APIClient:
        issued = core_services.create_token(goal_id=goal_id, agent_id=agent_id)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.secret}")
        return client

    return make


@pytest.fixture
def operator_client(db, django_user_model):
    user = django_user_model.objects.create_user(
        "op", password="pw-for-tests-only", is_staff=True, is_superuser=True
    )
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture(autouse=True)
def sandbox_children_as_the_server(monkeypatch):
    """The suite's test providers run on this venv's interpreter, which a separate
    sandbox user may not be able to execute (a venv under ``/root``): children keep the
    server's user unless a test asks for the sandbox user
    (``tests/core/test_sandbox_user.py``)."""
    monkeypatch.setenv("LOOPX_SANDBOX_USER", "")


@pytest.fixture(autouse=True)
def experiment_config_root(tmp_path_factory, monkeypatch):
    """Private experiment configs live under a temporary root outside any git work tree
    (also for subprocesses, through the environment). Django's settings are patched
    directly: a test module may name its own ``settings`` fixture."""
    from django.conf import settings as django_settings

    root = tmp_path_factory.mktemp("checkout")
    monkeypatch.setattr(django_settings, "REWARD_MEMORY_CONFIG_ROOT", str(root), raising=False)
    monkeypatch.setenv("LOOPX_REWARD_MEMORY_CONFIG_ROOT", str(root))
    return root


@pytest.fixture
def frozen_clock(monkeypatch):
    """Services read ``clock.now()``; the test runs at a fixed instant it can move
    (``set``, ``advance``). Autoused by ``tests/reward_memory`` and ``tests/turn_recall``."""
    from tests.reward_memory.factories import NOW

    state = {"now": NOW}
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
    """A Reward Memory provider double installed as provider ``double`` for the test."""
    from reward_memory import providers
    from reward_memory.providers.double import ProviderDouble

    with providers.use("double", ProviderDouble()) as provider:
        yield provider


@pytest.fixture
def other_goal(db):
    """Goal ``other`` with Agent ``author``: a second scope for isolation tests."""
    return AgentFactory(goal=GoalFactory(goal_id="other"), agent_id="author")


@pytest.fixture
def demo_goal(db):
    """Goal ``demo`` registered through the service, Agents ``author`` and ``reviewer``,
    state ref ``goals/demo/state.json``."""
    return core_services.register_goal(
        goal_id="demo", agent_ids=["author", "reviewer"], state_ref="goals/demo/state.json"
    ).goal


@pytest.fixture
def demo(db):
    """The ``make run`` demo data (``loopx_demo``), as a newcomer first sees it."""
    import io

    from django.core.management import call_command

    call_command("loopx_demo", stdout=io.StringIO())


#: Data migrations whose rows a database test may rely on (the default beat schedules).
_MIGRATION_ROWS = (
    ("loopx_site.core.migrations.0008_celery_background_run", "create_schedules"),
    ("loopx_site.core.migrations.0013_retention_schedule", "create_schedule"),
    ("reward_memory.migrations.0012_provider_deletion_outbox", "create_schedule"),
)


@pytest.fixture(autouse=True)
def _migration_rows(request):
    """Put back the rows the data migrations create (idempotently) before each database
    test. A transactional test flushes every table when it ends, and under xdist it may
    run before a test that relies on those rows in the same worker process."""
    marker = request.node.get_closest_marker("django_db")
    if marker is None and "db" not in request.fixturenames:
        return
    transactional = bool(marker and marker.kwargs.get("transaction"))
    if "transactional_db" in request.fixturenames or "live_server" in request.fixturenames:
        transactional = True
    request.getfixturevalue("transactional_db" if transactional else "db")
    import importlib

    from django.apps import apps

    for module, function in _MIGRATION_ROWS:
        getattr(importlib.import_module(module), function)(apps, None)
