from django.apps import AppConfig


class McpConfig(AppConfig):
    name = "loopx_site.mcp"
    label = "loopx_mcp"
    verbose_name = "MCP server"

    def ready(self):
        import logging

        # The SDK logs each stateless exchange's manager start/stop at INFO: one line
        # per request of our own (``loopx.request``) is enough.
        logging.getLogger("mcp").setLevel(logging.WARNING)
