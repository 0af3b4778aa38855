"""``manage.py mcp``: the MCP server over stdio for one host token.

The token comes from ``LOOPX_MCP_TOKEN`` (never an argument: arguments show in process
lists). Without a live token the command prints one error document and exits 2 before
speaking any protocol; with one, stdin/stdout carry MCP until the client closes them.
Every tool call resolves the token again, so revoking it ends what the session may do.
"""

import os

import anyio

from loopx_site.core.cli import LoopxCommand
from loopx_site.core.errors import DomainError

ENV = "LOOPX_MCP_TOKEN"


class Command(LoopxCommand):
    help = (
        "Serve the MCP tools over stdio for the host token in LOOPX_MCP_TOKEN "
        "(see docs/mcp.md). Exits 2 with an error document when the token is missing "
        "or not live."
    )

    def handle(self, *args, **options):
        from loopx_site.mcp import credentials, server

        secret = os.environ.get(ENV, "").strip()
        if not secret:
            raise DomainError(
                "not_authenticated",
                f"Set {ENV} to a host token (`manage.py token create --goal-id G "
                "--agent-id A --execute`).",
                field=ENV,
            )
        credentials.from_secret(secret)  # refused here, before any protocol, when not live
        credentials.current_resolver.set(lambda: credentials.from_secret(secret))
        anyio.run(server.build().run_stdio_async)
