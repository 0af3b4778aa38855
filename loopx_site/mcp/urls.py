from django.urls import path

from loopx_site.mcp import http

urlpatterns = [
    path("mcp/", http.McpEndpoint.as_view(), name="mcp"),
    path("mcp", http.McpEndpoint.as_view()),  # clients configured without the slash
    path(
        ".well-known/oauth-protected-resource",
        http.protected_resource_metadata,
        name="mcp-protected-resource",
    ),
    path(".well-known/oauth-protected-resource/mcp/", http.protected_resource_metadata),
    path(".well-known/oauth-protected-resource/mcp", http.protected_resource_metadata),
]
