"""schemathesis over ``/api/schema/``: every operation, generated requests, all checks.

Runs against the WSGI application in-process on the test database (fresh per run), as
a host token scoped to Goal ``demo``. Passing means: no 5xx, every response matches the
documented schema, no status code is undocumented, schema-violating requests are
refused. Examples are bounded and derandomised so the run is short and repeatable.

One built-in check is refined rather than dropped: ``positive_data_acceptance`` wants
a 2xx for every schema-valid body, but the schema cannot express the services' second
validation tier (guards, registered names, surface rules) — those refusals are 400s
by design. ``schema_valid_data_passes_the_serializer`` keeps the part that catches a
wrong schema: a schema-valid request must never be refused by the *serializer* (the
envelope's ``details.errors``) or as unparsable JSON, and may not get any other 4xx
than 400/401/403/404/409/413/429.
"""

import copy

import pytest
import schemathesis
from django.conf import settings
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.test import override_settings
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from loopx_site.core import services

pytestmark = pytest.mark.slow  # generates requests for every API operation

MAX_EXAMPLES = 10
ALLOWED_FOR_VALID_DATA = {400, 401, 403, 404, 409, 413, 429}


@schemathesis.check
def schema_valid_data_passes_the_serializer(ctx, response, case):
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code < 400:
        return
    if response.status_code >= 500:
        return  # not_a_server_error reports it
    assert response.status_code in ALLOWED_FOR_VALID_DATA, (
        f"schema-valid request refused with {response.status_code}"
    )
    if response.status_code == 400:
        body = response.json()
        assert body["code"] != "invalid_json", "schema-valid body refused as invalid JSON"
        assert "errors" not in body.get("details", {}), (
            f"schema-valid request refused by the serializer: {body['error']} "
            f"(field {body['field']}) - the schema must say so"
        )
    return


# Loaded over HTTP from the app itself at collection (the schema view needs no database).
schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", get_wsgi_application())


@pytest.fixture
def host_token(db):
    services.register_goal(goal_id="demo", agent_ids=["author", "reviewer"], state_ref="s")
    return services.create_token(goal_id="demo").secret


@pytest.fixture
def in_process_app():
    """In-process WSGI calls share the test's connection (and its transaction), as
    Django's test client does: the end of a request must not close it. Throttles are
    lifted here (the 429 path has its own tests) so every example reaches its view."""
    config = copy.deepcopy(settings.REST_FRAMEWORK)
    config["DEFAULT_THROTTLE_RATES"] = dict.fromkeys(config["DEFAULT_THROTTLE_RATES"])
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        with override_settings(REST_FRAMEWORK=config):
            yield
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


@schema.parametrize()
@hypothesis_settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_api_conforms_to_its_schema(case, host_token, in_process_app):
    case.call_and_validate(
        headers={"Authorization": f"Bearer {host_token}"},
        excluded_checks=[positive_data_acceptance],
        additional_checks=[schema_valid_data_passes_the_serializer],
    )
