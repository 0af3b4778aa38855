"""The request path does its fixed work once: a host token is resolved with one query,
and SQLite connections persist with their PRAGMAs applied when they open."""

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIRequestFactory

from loopx_site.core import services
from loopx_site.core.api.auth import HostTokenAuthentication
from tests.factories import AgentFactory, GoalFactory


@pytest.mark.django_db
def test_host_token_is_resolved_with_one_query_including_goal_and_agent():
    goal = GoalFactory(goal_id="demo")
    AgentFactory(goal=goal, agent_id="author")
    secret = services.create_token(goal_id="demo", agent_id="author").secret
    request = APIRequestFactory().get("/api/v1/goals/demo/", HTTP_AUTHORIZATION=f"Bearer {secret}")

    with CaptureQueriesContext(connection) as queries:
        caller, token_id = HostTokenAuthentication().authenticate(request)
        scope = (caller.goal_id, caller.agent_id, caller.token_id)

    assert len(queries) == 1  # goal and agent came with the token (no further query)
    assert scope == ("demo", "author", token_id)
    assert isinstance(token_id, int)


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite connection settings")
@pytest.mark.django_db
def test_sqlite_connections_persist_and_carry_their_pragmas():
    assert settings.DATABASES["default"]["CONN_MAX_AGE"] > 0
    with connection.cursor() as cursor:
        pragmas = {}
        for name in ("journal_mode", "synchronous", "cache_size"):
            cursor.execute(f"PRAGMA {name}")
            pragmas[name] = cursor.fetchone()[0]
    assert pragmas == {"journal_mode": "wal", "synchronous": 1, "cache_size": -65536}


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL prepared statements")
@pytest.mark.django_db
def test_postgresql_prepares_a_repeated_journal_read_instead_of_planning_it_each_time():
    from preferences import selectors

    goal = GoalFactory(goal_id="demo")
    AgentFactory(goal=goal, agent_id="author")
    for _ in range(7):  # psycopg prepares a statement on its 5th run on a connection
        selectors.current_rows(goal_id="demo", agent_id="author")
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cursor.fetchall()]

    assert settings.DATABASES["default"]["OPTIONS"]["server_side_binding"] is True
    assert any("preferences_preferencesubject" in sql for sql in prepared), prepared
