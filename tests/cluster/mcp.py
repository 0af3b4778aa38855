"""The MCP server through HAProxy (round robin, no sticky sessions): the SDK's own client
over Streamable HTTP, in the stateless revision and in the initialize-handshake one,
its requests alternating between the two instances."""

from __future__ import annotations

import asyncio
from collections import Counter

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

PINNED = {
    "read_preferences", "remember_preference", "retire_preference", "preference_history",
    "recall_memory", "propose_memory", "turn_guidance", "record_application",
}  # fmt: skip
AGENT = "c15"


async def _session(url: str, token: str, mode: str, served: Counter, run_id: int) -> dict:
    async def count(response):
        served[response.headers.get("X-Served-By", "?")] += 1

    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"},
        event_hooks={"response": [count]},
        timeout=30,
    )
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        read = await client.call_tool("read_preferences", {"agent_id": AGENT})
        revision = read.structured_content["current"]["revision"]
        arguments = {
            "agent_id": AGENT, "key": f"mcp.{mode}", "statement": f"cluster leg {mode} {run_id}",
            "source_ref": f"cluster:mcp/{mode}/{run_id}", "source_quote": "cluster leg",
            "expected_revision": revision, "operation_id": f"mcp-{mode}-{run_id}",
        }  # fmt: skip
        preview = await client.call_tool("remember_preference", arguments)
        applied = await client.call_tool("remember_preference", {**arguments, "execute": True})
        replayed = await client.call_tool("remember_preference", {**arguments, "execute": True})
        after = await client.call_tool("read_preferences", {"agent_id": AGENT})
        statuses = [r.structured_content.get("status") for r in (preview, applied, replayed)]
        keys = {item["key"] for item in after.structured_content["current"]["items"]}
        return {
            "protocol": client.protocol_version,
            "tools": tools == PINNED,
            "statuses": statuses,
            "read_back": f"mcp.{mode}" in keys,
        }


def mcp_through_haproxy(topo, tokens, ids):
    url = f"http://127.0.0.1:{topo.ports['haproxy']}/mcp/"
    served: Counter = Counter()
    run_id = ids.run()
    sessions = {
        mode: asyncio.run(_session(url, tokens["cluster"], mode, served, run_id))
        for mode in ("auto", "legacy")
    }
    ok = all(
        s["tools"] and s["read_back"] and s["statuses"] == ["preview", "applied", "replayed"]
        for s in sessions.values()
    )
    ok &= len([name for name in served if name != "?"]) == 2
    return ok, {
        "protocols": [s["protocol"] for s in sessions.values()],
        "statuses": {mode: s["statuses"] for mode, s in sessions.items()},
        "served_by": dict(served),
    }
