"""The MCP server: the Model Context Protocol face of the same services.

One server definition (``server.build``) with eight tools that are thin adapters over
the preferences, Reward Memory and Agent Turn Recall services, served over stdio
(``manage.py mcp``) and Streamable HTTP (``/mcp/`` in the Django site). The Goal and
Agent always come from the host token (``credentials``). See ``docs/mcp.md``.
"""
