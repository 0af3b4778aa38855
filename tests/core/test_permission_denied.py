"""A database that refuses the deployment's role names itself (issue 33): the API and the
CLI answer ``database_permission_denied``, not the outage code ``database_unavailable``
(the turn-start hook already told the two apart)."""

import json

import pytest
from django.db import OperationalError, ProgrammingError

from loopx_site.core.errors import from_database_error
from preferences import journal_store
from tests.helpers import run_cli


class _Psycopg42501(ProgrammingError):
    """What psycopg raises for SQLSTATE 42501 (its message is localised; the code is not)."""

    sqlstate = "42501"


@pytest.mark.parametrize(
    "exc",
    [
        ProgrammingError("permission denied for table preferences_preferencescope"),
        _Psycopg42501("keine Berechtigung für Tabelle"),
    ],
)
def test_a_permission_error_is_translated_to_its_own_code(exc):
    error = from_database_error(exc)
    assert (error.code, error.http_status) == ("database_permission_denied", 503)
    assert from_database_error(OperationalError("down")).code == "database_unavailable"


@pytest.fixture
def denied(monkeypatch):
    def refuse(**kwargs):
        raise ProgrammingError("permission denied for table preferences_preferencesubject")

    monkeypatch.setattr(journal_store, "read_rows", refuse)


def test_the_api_names_a_permission_error(agent, host_client, denied):
    response = host_client(agent.goal.goal_id, agent.agent_id).get(
        f"/api/v1/goals/{agent.goal.goal_id}/agents/{agent.agent_id}/preferences/"
    )
    assert response.status_code == 503
    assert response.json()["code"] == "database_permission_denied"


def test_the_cli_names_a_permission_error(agent, denied):
    result = run_cli(
        "semantic_preference",
        "agent",
        "read",
        "--goal-id",
        agent.goal.goal_id,
        "--agent-id",
        agent.agent_id,
        "--format",
        "json",
    )
    assert result.code == 2
    assert json.loads(result.stdout)["code"] == "database_permission_denied"
