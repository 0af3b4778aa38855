import pytest

from tests.factories import AgentFactory
from tests.reward_memory import factories as f


@pytest.fixture(autouse=True)
def _clock_frozen(frozen_clock):
    """Every test here runs at the frozen instant (``frozen_clock``, tests/conftest.py)."""


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


OPERATOR_ACCOUNTS = ("owner", "reviewer", "retirer")


@pytest.fixture
def account_client(db):
    """``account_client("reviewer")`` → an APIClient signed in as that operator account
    (staff, holding the ``core.operate_api`` permission the API requires of operators)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission
    from rest_framework.test import APIClient

    def make(username: str) -> APIClient:
        user, _ = get_user_model().objects.get_or_create(
            username=username, defaults={"is_staff": True}
        )
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label="core", codename="operate_api")
        )
        client = APIClient()
        client.force_authenticate(user)
        return client

    return make


CHECKPOINTS = (
    # (id, project, actor, role, scopes)
    (
        f.CHECKPOINT_ID,
        f.PROJECT,
        "user:maint-1",
        "core_contributor",
        ["issue_fix.request_reproduction", "issue_fix.request_changes"],
    ),
    # a role binding only (no action scope): the default candidates' source
    # ``user:maint-1`` holds ``maintainer`` in proj-a through this server record
    (f.ROLE_CHECKPOINT_ID, f.PROJECT, "user:maint-1", "maintainer", []),
    # the shipped case's checkpoint (LoopX's fixture authority map; reward_memory.demo)
    (
        "repository:authority-map",
        "repository:example",
        "github:user:maintainer",
        "verified_repository_core_contributor",
        ["issue_fix:scope_selection"],
    ),
)


@pytest.fixture(autouse=True)
def authority_rows(request):
    """For database tests: the corpus actors are operator accounts holding the Reward
    Memory operator permissions (``principals.PERMISSIONS``), and the default
    checkpoints are granted by an operator (as the admin or the command would)."""
    names = request.fixturenames
    if "transactional_db" in names:
        request.getfixturevalue("transactional_db")
    elif "db" in names or request.node.get_closest_marker("django_db"):
        request.getfixturevalue("db")
    else:
        return
    from django.contrib.auth import get_user_model

    from reward_memory import principals, services

    for name in OPERATOR_ACCOUNTS:
        user, _ = get_user_model().objects.get_or_create(username=name, defaults={"is_staff": True})
        principals.grant_operator_permissions(user)
    for checkpoint_id, project, actor, role, scopes in CHECKPOINTS:
        services.grant_checkpoint(
            checkpoint_id=checkpoint_id,
            project=project,
            actor=actor,
            role=role,
            action_scopes=scopes,
            operator=f.op(f.OWNER),
            execute=True,
        )


@pytest.fixture
def activated(db, double_corpus, double):
    """``double_corpus`` holding one activated record of Agent ``demo/author``; the
    double's call log starts empty."""

    f.ingested(event=f.scoped_event(), goal_id="demo", agent_id="author", execute=True)
    double.reset_calls()
    return double_corpus
