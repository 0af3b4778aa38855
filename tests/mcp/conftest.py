"""MCP test kit: the SDK's own client over the two transports.

``over_http(token)`` connects ``mcp.Client`` to ``/mcp/`` through Django's test client
(an httpx transport that hands each request to the WSGI view in the test's thread, so
the test's transaction is the server's); ``over_stdio(token)`` spawns ``manage.py mcp``
against the test database (committed rows: ``transactional_db``).
"""

import contextlib
import sys

import httpx2
import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.test import Client as DjangoClient
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from loopx_site.core import services as core_services
from tests.factories import AgentFactory, GoalFactory
from tests.helpers import ROOT, run_cli, subprocess_env

PINNED_TOOLS = {
    "read_preferences",
    "remember_preference",
    "retire_preference",
    "preference_history",
    "recall_memory",
    "propose_memory",
    "turn_guidance",
    "record_application",
}


class DjangoTransport(httpx2.AsyncBaseTransport):
    """httpx requests answered by the Django site in the calling (test) thread."""

    def __init__(self, **extra_headers: str):
        self.client = DjangoClient()
        self.extra = extra_headers

    async def handle_async_request(self, request):
        body = await request.aread()
        meta = {
            "HTTP_" + name.upper().replace("-", "_"): value
            for name, value in request.headers.items()
            if name.lower() not in ("content-type", "content-length", "host")
        }
        meta.update(self.extra)
        response = await sync_to_async(self.client.generic)(
            request.method,
            request.url.path,
            data=body,
            content_type=request.headers.get("content-type", "application/json"),
            **meta,
        )
        return httpx2.Response(
            response.status_code, headers=list(response.items()), content=response.content
        )


def http_client(token: str | None, **extra: str) -> httpx2.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx2.AsyncClient(
        transport=DjangoTransport(**extra), headers=headers, base_url="http://testserver"
    )


@contextlib.asynccontextmanager
async def over_http(token: str, *, mode: str = "auto"):
    http = http_client(token)
    transport = streamable_http_client("http://testserver/mcp/", http_client=http)
    async with Client(transport, mode=mode) as client:
        yield client


@contextlib.asynccontextmanager
async def over_stdio(token: str | None, *, mode: str = "auto"):
    env = subprocess_env(**({"LOOPX_MCP_TOKEN": token} if token else {}))
    params = StdioServerParameters(
        command=sys.executable, args=[str(ROOT / "manage.py"), "mcp"], env=env, cwd=str(ROOT)
    )
    async with Client(params, mode=mode) as client:
        yield client


def drive(scenario):
    """Run an async scenario from a sync test (``async_to_sync``: the Django side of
    each call comes back to this thread)."""
    return async_to_sync(scenario)()


@pytest.fixture
def frozen_clock(monkeypatch):
    """One instant for the whole test, so two adapters' documents compare byte for byte."""
    from loopx_site.core import clock

    instant = clock.now()
    monkeypatch.setattr(clock, "now", lambda: instant)
    return instant


@pytest.fixture
def scopes(db):
    """Goal ``demo`` (Agents author, reviewer) and Goal ``other`` (Agent stranger)."""
    goal = GoalFactory(goal_id="demo")
    AgentFactory(goal=goal, agent_id="author")
    AgentFactory(goal=goal, agent_id="reviewer")
    AgentFactory(goal=GoalFactory(goal_id="other"), agent_id="stranger")


@pytest.fixture
def tokens(scopes):
    def issue(goal_id, agent_id=None):
        return core_services.create_token(goal_id=goal_id, agent_id=agent_id).secret

    return {
        "author": issue("demo", "author"),
        "reviewer": issue("demo", "reviewer"),
        "goal": issue("demo"),
        "foreign": issue("other", "stranger"),
    }


@pytest.fixture
def demo(db):
    """``make run``'s demo data (corpora, records, experiments) and an author token."""
    loaded = run_cli("loopx_demo")
    assert loaded.code == 0, loaded.stdout
    return core_services.create_token(goal_id="demo", agent_id="author").secret
