"""Per-token rate limits on provider runs (recall, doctor) and Reward Memory ingest."""

import copy

import pytest
from django.conf import settings
from django.test import override_settings

from loopx_site.core.models import Goal
from tests.factories import AgentFactory, GoalFactory

RECALL = "/api/v1/semantic-preferences/recall/"
DOCTOR = "/api/v1/semantic-preferences/doctor/"
INGEST = "/api/v1/reward-memory/ingest/"
TURN_RECALL = "/api/v1/turn-recall/"


def rates(**scopes):
    config = copy.deepcopy(settings.REST_FRAMEWORK)
    config["DEFAULT_THROTTLE_RATES"].update(scopes)
    return override_settings(REST_FRAMEWORK=config)


@pytest.fixture
def goals(db):
    demo = GoalFactory(goal_id="demo")
    AgentFactory(goal=demo, agent_id="author")
    GoalFactory(goal_id="other")
    return Goal.objects.all()


def test_settings_give_every_scope_a_rate_from_the_environment():
    configured = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    assert set(configured) == {"recall", "doctor", "ingest", "turn_recall"}
    assert all(isinstance(rate, str) and "/" in rate for rate in configured.values())


@pytest.mark.parametrize(
    ("url", "scope", "area"),
    [
        (RECALL, "recall", "semantic_preference"),
        (DOCTOR, "doctor", "semantic_preference"),
        (INGEST, "ingest", "reward_memory"),
        (TURN_RECALL, "turn_recall", "agent_turn_recall"),
    ],
)
def test_a_token_over_its_budget_gets_the_429_envelope_with_retry_after(
    host_client, goals, url, scope, area
):
    client = host_client("demo")
    with rates(**{scope: "2/min"}):
        first = [client.post(url, {}, format="json").status_code for _ in range(2)]
        refused = client.post(url, {}, format="json")
    assert 429 not in first  # the budget's calls reach the view (they are answered on merit)
    assert refused.status_code == 429
    body = refused.json()
    assert body["code"] == "throttled"
    assert body["status"] == "throttled"
    assert body["schema_version"] == f"{area}_error_v0"
    assert int(refused["Retry-After"]) >= 1
    assert body["details"]["retry_after_seconds"] == int(refused["Retry-After"])


def test_the_budget_belongs_to_the_token_not_the_address(host_client, goals):
    first_token = host_client("demo")
    second_token = host_client("demo")  # same Goal, same client address
    with rates(doctor="1/min"):
        assert first_token.post(DOCTOR, {}, format="json").status_code != 429
        assert first_token.post(DOCTOR, {}, format="json").status_code == 429
        assert second_token.post(DOCTOR, {}, format="json").status_code != 429


def test_scopes_are_separate_and_unthrottled_routes_are_untouched(host_client, goals):
    client = host_client("demo")
    with rates(doctor="1/min"):
        client.post(DOCTOR, {}, format="json")
        assert client.post(DOCTOR, {}, format="json").status_code == 429
        assert client.post(RECALL, {}, format="json").status_code != 429
        for _ in range(5):
            assert client.get("/api/v1/goals/demo/").status_code == 200


def test_off_disables_a_scope(host_client, goals):
    client = host_client("demo")
    with rates(doctor=None):
        codes = {client.post(DOCTOR, {}, format="json").status_code for _ in range(5)}
    assert 429 not in codes


def test_rates_come_from_the_environment():
    import json
    import os
    import subprocess
    import sys

    from tests.helpers import ROOT

    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(
        DJANGO_SETTINGS_MODULE="loopx_site.settings",
        LOOPX_THROTTLE_RECALL="5/hour",
        LOOPX_THROTTLE_DOCTOR="off",
    )
    env.pop("LOOPX_THROTTLE_INGEST", None)
    env.pop("LOOPX_THROTTLE_TURN_RECALL", None)
    code = (
        "import django, json; django.setup(); from django.conf import settings; "
        "print(json.dumps(settings.REST_FRAMEWORK['DEFAULT_THROTTLE_RATES']))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "recall": "5/hour",
        "doctor": None,
        "ingest": "120/min",
        "turn_recall": "120/min",
    }
