"""On PostgreSQL, a real permission denial on the preference store is reported as
``agent_preferences_permission_denied`` — not as an unreadable store."""

import pytest
from django.db import connection

from preferences import services as pref_services

ROLE = "loopx_turn_recall_noperm"


@pytest.fixture
def denied_role(db):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL roles")
    with connection.cursor() as cur:
        cur.execute(
            f"DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{ROLE}') "
            f"THEN CREATE ROLE {ROLE}; END IF; END $$;"
        )
        cur.execute(f"GRANT USAGE ON SCHEMA public TO {ROLE}")
        cur.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {ROLE}")
        cur.execute(f"REVOKE SELECT ON preferences_preferencescope FROM {ROLE}")
    yield ROLE
    with connection.cursor() as cur:
        cur.execute("RESET ROLE")


def test_a_denied_store_is_permission_denied_on_postgresql(todo, denied_role):
    pref_services.remember(
        goal_id="demo",
        agent_id="author",
        key="review.collaboration",
        statement="Ask the designated reviewer before merging.",
        source_ref="owner-message-1",
        source_quote="Use the designated reviewer.",
        expected_revision="none",
        operation_id="p-1",
        execute=True,
    )
    from turn_recall import adapters

    with connection.cursor() as cur:
        cur.execute(f"SET ROLE {denied_role}")
    seen = adapters.observe_preferences(todo.goal, todo.goal.agents.get(agent_id="author"))
    assert (seen.participating, seen.error_code) == (True, "agent_preferences_permission_denied")
