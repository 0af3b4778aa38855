"""Streamable HTTP at ``/mcp/``: a Django view on the SDK's request handler.

The site is WSGI (gunicorn in ``make serve`` and the cluster leg), so the MCP transport
runs inside the same request, not in a second ASGI server: this view checks the origin
and the token, then hands the request to a fresh *stateless*
``StreamableHTTPSessionManager`` on a private event loop in this request's thread
(``bridge.run_here``). The tools' bodies run in the same thread while that loop is paused,
so they use the request's database connection like any view, and no thread is started or
switched per request. Nothing is kept between requests: any instance behind the load
balancer answers any request, with no sticky sessions. Both protocol eras are served:
the stateless revision (one self-contained POST) and the initialize-handshake revisions
(in stateless mode: no ``Mcp-Session-Id``, every request stands alone).

Refusals before the protocol: a foreign ``Host`` or ``Origin`` (DNS rebinding) is 403;
no or a dead token is 401 with ``WWW-Authenticate: Bearer resource_metadata=…`` pointing
at the RFC 9728 metadata (``/.well-known/oauth-protected-resource``).
"""

import json
from urllib.parse import urlsplit

import anyio
from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import HttpResponse, JsonResponse
from django.http.request import validate_host
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.csrf import csrf_exempt
from mcp.server._streamable_http_modern import handle_modern_request
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from loopx_site.core.errors import DomainError
from loopx_site.mcp import bridge, credentials, server

_SERVER = server.build()
#: The SDK's handshake-and-dispatch core of the one server definition (the manager
#: takes the low-level server; ``MCPServer`` exposes it only through its own Starlette app).
_LOWLEVEL = _SERVER._lowlevel_server
#: Host and Origin are checked by this view against Django's ALLOWED_HOSTS.
_NO_SDK_HOST_CHECK = TransportSecuritySettings(enable_dns_rebinding_protection=False)
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding"}


def _allowed_hosts() -> list[str]:
    hosts = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not hosts:
        hosts = [".localhost", "127.0.0.1", "[::1]"]
    return hosts


def _foreign(request) -> str | None:
    """Why the request comes from a foreign site (DNS rebinding), or ``None``."""
    try:
        request.get_host()
    except DisallowedHost:
        return "Host"
    origin = request.headers.get("Origin")
    if origin is None:
        return None
    host = urlsplit(origin).hostname if origin != "null" else None
    if not host or not validate_host(host, _allowed_hosts()):
        return "Origin"
    return None


def resource_url(request) -> str:
    return request.build_absolute_uri("/mcp/")


def _metadata_url(request) -> str:
    return request.build_absolute_uri("/.well-known/oauth-protected-resource")


def protected_resource_metadata(request):
    """RFC 9728 metadata: this server is the resource; tokens go in the header."""
    return JsonResponse(
        {
            "resource": resource_url(request),
            "bearer_methods_supported": ["header"],
            "resource_name": "LoopX Memory MCP server",
            "resource_documentation": request.build_absolute_uri("/api/docs/"),
            "authorization_servers": [],
            "scopes_supported": [],
        }
    )


def _refusal(err: DomainError, status: int, **headers: str) -> HttpResponse:
    response = HttpResponse(
        json.dumps(err.envelope(), sort_keys=True), status=status, content_type="application/json"
    )
    for name, value in headers.items():
        response[name] = value
    return response


def _header(scope: dict, name: str) -> str | None:
    key = name.lower().encode("latin-1")
    return next((v.decode("latin-1") for k, v in scope["headers"] if k == key), None)


def _scope(request) -> dict:
    headers = [
        (name.lower().encode("latin-1"), value.encode("latin-1"))
        for name, value in request.headers.items()
    ]
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.path.encode(),
        "root_path": "",
        "query_string": request.META.get("QUERY_STRING", "").encode("latin-1"),
        "headers": headers,
        "server": (request.get_host(), int(request.get_port())),
        "client": (request.META.get("REMOTE_ADDR", ""), 0),
    }


async def _serve(scope: dict, body: bytes, credential) -> tuple[int, list, bytes]:
    """One HTTP exchange through a fresh stateless manager (nothing outlives it)."""
    credentials.current_resolver.set(lambda: credential)
    answered = anyio.Event()
    sent = {"body": False}
    status, headers, chunks = 500, [], []

    async def receive():
        if not sent["body"]:
            sent["body"] = True
            return {"type": "http.request", "body": body, "more_body": False}
        await answered.wait()
        return {"type": "http.disconnect"}

    async def send(message):
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status, headers = message["status"], list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                answered.set()

    version = _header(scope, MCP_PROTOCOL_VERSION_HEADER)
    if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
        # The stateless revision: one self-contained POST. This is the manager's own
        # route for it, taken directly: the manager adds only a task group and a
        # request-size limit (Django's DATA_UPLOAD_MAX_MEMORY_SIZE bounds the body).
        async with _LOWLEVEL.lifespan(_LOWLEVEL) as state:
            await handle_modern_request(
                _LOWLEVEL, _NO_SDK_HOST_CHECK, True, state, scope, receive, send
            )
    else:
        manager = StreamableHTTPSessionManager(
            _LOWLEVEL, json_response=True, stateless=True, security_settings=_NO_SDK_HOST_CHECK
        )
        async with manager.run():
            await manager.handle_request(scope, receive, send)
    answered.set()
    return status, headers, b"".join(chunks)


@method_decorator(csrf_exempt, name="dispatch")
class McpEndpoint(View):
    """``/mcp/``: POST carries JSON-RPC. A stateless server offers no server-to-client
    stream (GET) and no session to end (DELETE): both are 405, answered here, so no
    request ever holds a worker open waiting for a stream."""

    http_method_names = ["get", "post", "delete"]

    def dispatch(self, request, *args, **kwargs):
        foreign = _foreign(request)
        if foreign:
            err = DomainError(
                "scope_forbidden", f"Foreign {foreign} refused (DNS rebinding protection)."
            )
            return _refusal(err, 403)
        try:
            self.credential = credentials.from_authorization(request.headers.get("Authorization"))
        except DomainError as err:
            challenge = f'Bearer resource_metadata="{_metadata_url(request)}"'
            return _refusal(err, 401, **{"WWW-Authenticate": challenge})
        return super().dispatch(request, *args, **kwargs)

    def _exchange(self, request):
        status, headers, body = bridge.run_here(
            _serve,
            _scope(request),
            request.body,
            self.credential,
        )
        response = HttpResponse(body, status=status)
        for name, value in headers:
            name = name.decode("latin-1")
            if name.lower() not in _HOP_BY_HOP and name.lower() != "content-length":
                response[name] = value.decode("latin-1")
        return response

    post = _exchange

    def get(self, request, *args, **kwargs):
        return self._not_allowed()

    delete = get

    @staticmethod
    def _not_allowed() -> HttpResponse:
        err = DomainError("method_not_allowed", "POST JSON-RPC to this stateless server.")
        response = _refusal(err, 405)
        response["Allow"] = "POST"
        return response
