"""``/mcp/``'s edges before the protocol — 401 with the RFC 9728 pointer, the metadata,
DNS-rebinding refusals — and per-token throttles, each tool's refusal."""

import pytest
from django.test import Client as DjangoClient

from tests.mcp.conftest import drive, over_http
from tests.mcp.test_http_preferences import REMEMBER

INIT = (
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    '"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
)
ACCEPT = {"HTTP_ACCEPT": "application/json, text/event-stream"}


def test_without_a_token_mcp_answers_401_pointing_at_the_protected_resource_metadata(db):
    client = DjangoClient()
    refused = client.post("/mcp/", INIT, content_type="application/json", **ACCEPT)
    wrong = client.post(
        "/mcp/", INIT, content_type="application/json", HTTP_AUTHORIZATION="Bearer lxh_nope"
    )
    metadata = client.get("/.well-known/oauth-protected-resource")
    assert refused.status_code == 401
    assert wrong.status_code == 401
    assert refused.json()["code"] == "not_authenticated"
    assert refused["WWW-Authenticate"] == (
        'Bearer resource_metadata="http://testserver/.well-known/oauth-protected-resource"'
    )
    assert metadata.status_code == 200
    assert metadata.json()["resource"] == "http://testserver/mcp/"
    assert metadata.json()["bearer_methods_supported"] == ["header"]


def test_a_foreign_host_or_origin_is_refused_before_any_mcp_handling(tokens):
    auth = {"HTTP_AUTHORIZATION": f"Bearer {tokens['author']}", **ACCEPT}
    client = DjangoClient()
    foreign_origin = client.post(
        "/mcp/", INIT, content_type="application/json", HTTP_ORIGIN="http://evil.example", **auth
    )
    foreign_host = client.post(
        "/mcp/", INIT, content_type="application/json", HTTP_HOST="evil.example", **auth
    )
    own = client.post(
        "/mcp/", INIT, content_type="application/json", HTTP_ORIGIN="http://testserver", **auth
    )
    assert foreign_origin.status_code == 403
    assert 400 <= foreign_host.status_code < 500
    assert own.status_code == 200
    assert own.json()["result"]["serverInfo"]["name"] == "loopx-memory"


def test_writes_are_throttled_per_token_as_on_the_api(tokens, settings):
    rates = {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "write": "2/min"}
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}

    async def scenario():
        results = []
        for token in (tokens["author"], tokens["author"], tokens["author"], tokens["reviewer"]):
            async with over_http(token) as client:
                results.append(
                    await client.call_tool(
                        "remember_preference", {**REMEMBER, "expected_revision": None}
                    )
                )
        return results

    first, second, third, other_token = drive(scenario)
    assert (first.is_error, second.is_error) == (False, False)
    assert third.is_error
    assert third.structured_content["code"] == "throttled"
    assert third.structured_content["details"]["retry_after"] >= 1
    assert other_token.is_error is False  # the budget is the token's


@pytest.mark.parametrize(
    ("tool", "arguments", "code"),
    [
        ("retire_preference", {"key": "k", "source_ref": "r", "source_quote": "q",
                               "expected_revision": "5", "operation_id": "op-r", "execute": True},
         "revision_conflict"),
        ("preference_history", {"after_cursor": "not-a-cursor"}, "cursor_unavailable"),
        ("turn_guidance", {"turn_instance_id": "t-1", "quota_decision": {},
                           "agent_id": "reviewer"}, "resource_not_found"),
    ],
)  # fmt: skip
def test_each_remaining_tool_refuses_with_an_error_document(tokens, tool, arguments, code):
    async def scenario():
        async with over_http(tokens["author"]) as client:
            return await client.call_tool(tool, arguments)

    result = drive(scenario)
    assert result.is_error
    assert result.structured_content["ok"] is False
    assert "Traceback" not in result.content[0].text
    assert result.structured_content["code"] == code


def test_get_and_delete_are_405_never_a_stream_held_open(tokens):
    client = DjangoClient(HTTP_AUTHORIZATION=f"Bearer {tokens['author']}")
    stream = client.get("/mcp/", HTTP_ACCEPT="text/event-stream")
    end = client.delete("/mcp/")
    assert (stream.status_code, end.status_code) == (405, 405)
    assert stream["Allow"] == "POST"
    assert stream.json()["code"] == "method_not_allowed"
