"""The MCP server over Streamable HTTP (``/mcp/``), driven by the SDK's own client: the
pinned tools, the preference journal through the same service and documents as the CLI,
scope probes and refusals."""

import json

import pytest

from loopx_site.core.models import HostToken
from tests.helpers import run_cli
from tests.mcp.conftest import PINNED_TOOLS, drive, over_http

REMEMBER = {
    "key": "review.collaboration",
    "statement": "Ask the designated reviewer before merging.",
    "source_ref": "chat:owner/42",
    "source_quote": "always ask the reviewer before you merge",
    "operation_id": "op-mcp-1",
}


def _cli_remember(expected_revision: str, *, execute: bool, operation_id: str = "op-mcp-1"):
    argv = [
        "semantic_preference", "agent", "remember", "--goal-id", "demo", "--agent-id", "author",
        "--key", REMEMBER["key"], "--statement", REMEMBER["statement"],
        "--source-ref", REMEMBER["source_ref"], "--source-quote", REMEMBER["source_quote"],
        "--expected-revision", expected_revision, "--operation-id", operation_id,
    ]  # fmt: skip
    return run_cli(*argv, *(["--execute"] if execute else []))


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_tools_list_names_the_pinned_tools_with_annotations_and_output_schemas(tokens, mode):
    async def scenario():
        async with over_http(tokens["author"], mode=mode) as client:
            return client.protocol_version, (await client.list_tools()).tools

    version, tools = drive(scenario)
    assert version == ("2026-07-28" if mode == "auto" else "2025-11-25")
    by_name = {tool.name: tool for tool in tools}
    assert set(by_name) == PINNED_TOOLS
    assert by_name["read_preferences"].annotations.read_only_hint is True
    assert by_name["preference_history"].annotations.read_only_hint is True
    assert by_name["retire_preference"].annotations.destructive_hint is True
    assert by_name["remember_preference"].annotations.read_only_hint is False
    assert all(tool.output_schema for tool in tools)
    remember = by_name["remember_preference"].input_schema
    assert remember["properties"]["execute"]["default"] is False


def test_remember_preview_execute_replay_and_conflict_are_the_cli_documents(tokens, frozen_clock):
    async def call(arguments):
        async with over_http(tokens["author"]) as client:
            return await client.call_tool("remember_preference", arguments)

    def mcp(expected_revision, **extra):
        async def scenario():
            return await call({**REMEMBER, "expected_revision": expected_revision, **extra})

        return drive(scenario)

    preview = mcp(None)
    assert (preview.is_error, preview.structured_content["status"]) == (False, "preview")
    assert preview.structured_content == _cli_remember("none", execute=False).json

    applied = mcp(None, execute=True)
    assert applied.structured_content["status"] == "applied"
    replay_cli = _cli_remember("none", execute=True)
    replay_mcp = mcp(None, execute=True)
    assert replay_mcp.structured_content["status"] == "replayed"
    assert replay_mcp.structured_content == replay_cli.json

    conflict = mcp("7", execute=True, operation_id="op-mcp-2")
    cli_conflict = _cli_remember("7", execute=True, operation_id="op-mcp-2")
    assert conflict.is_error
    assert cli_conflict.code == 2
    keys = ("ok", "schema_version", "status", "code", "details", "current")
    assert {k: conflict.structured_content[k] for k in keys} == {
        k: cli_conflict.json[k] for k in keys
    }
    assert conflict.structured_content["field"] == "expected_revision"
    # the short text rendering names the code and the field
    assert conflict.content[0].text.startswith("error revision_conflict (field expected_revision)")
    assert replay_mcp.content[0].text.splitlines()[1].startswith("- review.collaboration [active]")


def test_read_retire_and_history_pages_with_a_cursor(tokens):
    async def scenario():
        async with over_http(tokens["author"]) as client:
            first = await client.call_tool(
                "remember_preference", {**REMEMBER, "expected_revision": None, "execute": True}
            )
            revision = first.structured_content["current"]["revision"]
            retire = await client.call_tool(
                "retire_preference",
                {
                    "key": REMEMBER["key"], "source_ref": "chat:owner/43",
                    "source_quote": "forget the reviewer rule", "expected_revision": revision,
                    "operation_id": "op-mcp-retire", "execute": True,
                },
            )  # fmt: skip
            page = await client.call_tool("preference_history", {"limit": 1})
            cursor = page.structured_content["next_cursor"]
            rest = await client.call_tool("preference_history", {"after_cursor": cursor})
            read = await client.call_tool("read_preferences", {})
            return read, retire, page, rest

    read, retire, page, rest = drive(scenario)
    assert (
        read.structured_content
        == run_cli(
            "semantic_preference", "agent", "read", "--goal-id", "demo", "--agent-id", "author"
        ).json
    )
    assert retire.structured_content["status"] == "applied"
    assert retire.structured_content["current"]["items"][0]["state"] == "retired"
    assert page.structured_content["has_more"] is True
    assert len(page.structured_content["events"]) == 1
    assert rest.structured_content["has_more"] is False
    assert len(rest.structured_content["events"]) == 1
    assert rest.structured_content["events"][0] != page.structured_content["events"][0]


def test_a_bad_argument_is_a_tool_error_carrying_the_error_document(tokens):
    async def scenario():
        async with over_http(tokens["author"]) as client:
            long_key = await client.call_tool(
                "remember_preference", {**REMEMBER, "key": "k" * 500, "expected_revision": None}
            )
            missing = await client.call_tool("remember_preference", {"key": "only"})
            return long_key, missing

    long_key, missing = drive(scenario)
    assert long_key.is_error
    assert (long_key.structured_content["code"], long_key.structured_content["field"]) == (
        "invalid_argument",
        "key",
    )
    assert "Traceback" not in long_key.content[0].text
    assert missing.is_error  # the SDK's own argument check: named fields, no values
    assert "Traceback" not in missing.content[0].text


def _probe(token, arguments):
    async def scenario():
        async with over_http(token) as client:
            result = await client.call_tool("read_preferences", arguments)
            return result.is_error, result.structured_content

    return drive(scenario)


def test_another_scope_answers_exactly_like_one_that_does_not_exist(tokens):
    missing = _probe(tokens["author"], {"agent_id": "nobody"})
    sibling = _probe(tokens["author"], {"agent_id": "reviewer"})
    foreign_goal = _probe(tokens["author"], {"goal_id": "other", "agent_id": "stranger"})
    absent_goal = _probe(tokens["author"], {"goal_id": "absent", "agent_id": "stranger"})
    goal_wide_foreign = _probe(tokens["goal"], {"goal_id": "other", "agent_id": "stranger"})
    assert missing[0] is True
    assert sibling == missing
    assert foreign_goal == absent_goal
    assert goal_wide_foreign == foreign_goal
    assert missing[1]["code"] == "resource_not_found"


def test_a_goal_wide_token_must_name_one_of_its_agents(tokens):
    unnamed = _probe(tokens["goal"], {})
    named = _probe(tokens["goal"], {"agent_id": "reviewer"})
    assert unnamed[0] is True
    assert (unnamed[1]["code"], unnamed[1]["field"]) == ("invalid_argument", "agent_id")
    assert named[0] is False
    assert (named[1]["goal_id"], named[1]["agent_id"]) == ("demo", "reviewer")
    # the sibling's own token reads its own scope; the foreign token its own
    assert _probe(tokens["reviewer"], {})[1]["agent_id"] == "reviewer"
    assert _probe(tokens["foreign"], {})[1]["goal_id"] == "other"


def test_a_token_revoked_mid_session_is_refused_on_its_next_call(tokens):
    async def scenario():
        async with over_http(tokens["author"]) as client:
            before = await client.call_tool("read_preferences", {})
            await revoke()
            try:
                await client.call_tool("read_preferences", {})
            except Exception as exc:  # the 401 ends the exchange
                return before, exc
            return before, None

    from asgiref.sync import sync_to_async

    from loopx_site.core import clock

    @sync_to_async
    def revoke():
        HostToken.objects.filter(goal__goal_id="demo", agent__agent_id="author").update(
            revoked_at=clock.now()
        )

    before, after = drive(scenario)
    assert before.is_error is False
    assert after is not None


def test_the_live_preferences_resource_is_the_current_view(tokens):
    async def scenario():
        async with over_http(tokens["author"]) as client:
            await client.call_tool(
                "remember_preference", {**REMEMBER, "expected_revision": None, "execute": True}
            )
            listed = await client.list_resources()
            read = await client.read_resource("loopx://preferences/current")
            return listed, read

    listed, read = drive(scenario)
    assert [str(r.uri) for r in listed.resources] == ["loopx://preferences/current"]
    current = json.loads(read.contents[0].text)
    assert current["schema_version"] == "agent_preferences_v1"
    assert current["items"][0]["key"] == REMEMBER["key"]
