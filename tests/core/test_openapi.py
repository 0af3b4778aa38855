"""The served OpenAPI schema documents error envelopes, real success codes, app tags."""

import pytest

EXPECTED_TAGS = {"registry", "preferences", "reward_memory", "hooks"}


@pytest.fixture
def openapi(client, db):
    response = client.get("/api/schema/?format=json")
    assert response.status_code == 200
    return response.json()


def operations(openapi):
    for path, item in openapi["paths"].items():
        for method, operation in item.items():
            yield path, method, operation


def test_every_operation_lists_the_error_envelope_for_auth_scope_and_outage(openapi):
    envelope = {"$ref": "#/components/schemas/ErrorEnvelope"}
    for path, method, operation in operations(openapi):
        responses = operation["responses"]
        for code in ("401", "403", "503"):
            assert responses[code]["content"]["application/json"]["schema"] == envelope, (
                path,
                method,
                code,
            )
        if "requestBody" in operation:
            assert {"400", "404", "409", "413"} <= set(responses), (path, method)


def test_the_envelope_component_has_the_documented_fields(openapi):
    component = openapi["components"]["schemas"]["ErrorEnvelope"]
    assert set(component["properties"]) == {
        "ok",
        "schema_version",
        "status",
        "error",
        "code",
        "field",
        "details",
    }


def test_throttled_operations_document_429_with_retry_after(openapi):
    throttled = {(p, m) for p, m, op in operations(openapi) if "429" in op["responses"]}
    writes = {(p, m) for p, m, _ in operations(openapi) if m in ("post", "put", "patch")}
    unthrottled = {  # receipts are built and returned: no provider, nothing written
        ("/api/v1/semantic-preferences/receipts/", "post"),
        ("/api/v1/semantic-preferences/maintenance-receipts/", "post"),
    }
    assert throttled == writes - unthrottled
    assert all(m != "get" for _, m in throttled)
    for path, method in throttled:
        assert "Retry-After" in openapi["paths"][path][method]["responses"]["429"]["headers"]


def test_writes_that_answer_201_document_it(openapi):
    remember = openapi["paths"]["/api/v1/goals/{goal_id}/agents/{agent_id}/preferences/remember/"]
    assert {"200", "201"} <= set(remember["post"]["responses"])
    assert "201" in openapi["paths"]["/api/v1/goals/"]["post"]["responses"]


def test_tags_name_the_app_never_the_version(openapi):
    tags = {tag for _, _, op in operations(openapi) for tag in op["tags"]}
    assert "v1" not in tags
    assert tags >= EXPECTED_TAGS
