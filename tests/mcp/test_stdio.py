"""``manage.py mcp``: the same server over stdio, spawned by the SDK's own client against
the test database (committed rows, so ``transactional_db``)."""

import json
import subprocess
import sys

import pytest
from asgiref.sync import sync_to_async

from loopx_site.core import clock
from loopx_site.core.models import HostToken
from tests.helpers import ROOT, run_cli, subprocess_env
from tests.mcp.conftest import PINNED_TOOLS, drive, over_stdio
from tests.mcp.test_http_preferences import REMEMBER

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _mcp(env_token: str | None) -> subprocess.CompletedProcess:
    env = subprocess_env()
    env.pop("LOOPX_MCP_TOKEN", None)
    if env_token is not None:
        env["LOOPX_MCP_TOKEN"] = env_token
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "mcp"],
        capture_output=True, text=True, timeout=60, env=env, cwd=ROOT, stdin=subprocess.DEVNULL,
        check=False,
    )  # fmt: skip


def test_without_a_live_token_the_command_prints_an_error_document_and_exits_2(tokens):
    missing = _mcp(None)
    unknown = _mcp("lxh_not-a-real-token")
    assert missing.returncode == 2
    assert json.loads(missing.stdout)["code"] == "not_authenticated"
    assert json.loads(missing.stdout)["field"] == "LOOPX_MCP_TOKEN"
    assert unknown.returncode == 2
    assert json.loads(unknown.stdout)["code"] == "not_authenticated"
    assert "Traceback" not in missing.stderr + unknown.stderr


def test_stdio_lists_the_tools_and_remembers_as_the_cli_does(tokens, frozen_clock):
    async def scenario():
        async with over_stdio(tokens["author"]) as client:
            tools = (await client.list_tools()).tools
            args = {**REMEMBER, "expected_revision": None}
            preview = await client.call_tool("remember_preference", args)
            applied = await client.call_tool("remember_preference", {**args, "execute": True})
            replayed = await client.call_tool("remember_preference", {**args, "execute": True})
            conflict = await client.call_tool(
                "remember_preference",
                {**args, "expected_revision": "9", "operation_id": "op-9", "execute": True},
            )
            sibling = await client.call_tool("read_preferences", {"agent_id": "reviewer"})
            nobody = await client.call_tool("read_preferences", {"agent_id": "nobody"})
            return tools, preview, applied, replayed, conflict, sibling, nobody

    tools, preview, applied, replayed, conflict, sibling, nobody = drive(scenario)
    assert {tool.name for tool in tools} == PINNED_TOOLS
    assert preview.structured_content["status"] == "preview"
    assert applied.structured_content["status"] == "applied"
    cli_replay = run_cli(
        "semantic_preference", "agent", "remember", "--goal-id", "demo", "--agent-id", "author",
        "--key", REMEMBER["key"], "--statement", REMEMBER["statement"],
        "--source-ref", REMEMBER["source_ref"], "--source-quote", REMEMBER["source_quote"],
        "--expected-revision", "none", "--operation-id", REMEMBER["operation_id"], "--execute",
    )  # fmt: skip
    assert replayed.structured_content == cli_replay.json
    assert conflict.is_error
    assert conflict.structured_content["code"] == "revision_conflict"
    assert sibling.is_error
    assert sibling.structured_content == nobody.structured_content


def test_a_token_revoked_mid_session_is_refused_on_the_next_stdio_call(tokens):
    @sync_to_async
    def revoke():
        HostToken.objects.filter(goal__goal_id="demo", agent__agent_id="author").update(
            revoked_at=clock.now()
        )

    async def scenario():
        async with over_stdio(tokens["author"]) as client:
            before = await client.call_tool("read_preferences", {})
            await revoke()
            after = await client.call_tool("read_preferences", {})
            return before, after

    before, after = drive(scenario)
    assert before.is_error is False
    assert after.is_error
    assert after.structured_content["code"] == "not_authenticated"
