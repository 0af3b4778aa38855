import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

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
def experiment_config_root(tmp_path_factory, monkeypatch):
    """Private experiment configs live under a temporary root outside any git work tree
    (also for subprocesses, through the environment). Django's settings are patched
    directly: a test module may name its own ``settings`` fixture."""
    from django.conf import settings as django_settings

    root = tmp_path_factory.mktemp("checkout")
    monkeypatch.setattr(django_settings, "REWARD_MEMORY_CONFIG_ROOT", str(root), raising=False)
    monkeypatch.setenv("LOOPX_REWARD_MEMORY_CONFIG_ROOT", str(root))
    return root
