from django.apps import AppConfig


class McpConfig(AppConfig):
    name = "loopx_site.mcp"
    label = "loopx_mcp"
    verbose_name = "MCP server"
