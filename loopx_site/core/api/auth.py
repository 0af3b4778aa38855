"""Host token authentication.

Hosts send ``Authorization: Bearer <token>`` (``Token <token>`` is accepted too). A
token is scoped to one Goal and optionally one Agent; ``request.auth`` is the token's
``TokenCredential`` (id, prefix, scope — one indexed query) and ``request.user`` a
``HostPrincipal`` carrying that scope.
"""

from dataclasses import dataclass

from rest_framework import authentication, exceptions, status

from loopx_site.core import selectors
from loopx_site.core.services import digest_token


@dataclass(frozen=True)
class HostPrincipal:
    goal_id: str
    agent_id: str | None
    token_prefix: str

    is_authenticated = True
    is_anonymous = False
    is_staff = False
    is_active = True

    def __str__(self) -> str:
        return f"host:{self.token_prefix}"


class HostTokenAuthentication(authentication.BaseAuthentication):
    keywords = ("bearer", "token")

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].decode("latin-1").lower() not in self.keywords:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Malformed Authorization header.")
        try:
            secret = header[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("Malformed token.") from None
        token = selectors.live_token(digest_token(secret))
        if token is None:
            raise exceptions.AuthenticationFailed("Unknown or revoked token.")
        principal = HostPrincipal(
            goal_id=token.goal_id, agent_id=token.agent_id, token_prefix=token.prefix
        )
        return principal, token

    def authenticate_header(self, request):
        return 'Bearer realm="api"'


class CsrfFailed(exceptions.PermissionDenied):
    """A session-authenticated write without a valid CSRF token (403 ``csrf_failed``)."""

    status_code = status.HTTP_403_FORBIDDEN
    default_code = "csrf_failed"


class OperatorSessionAuthentication(authentication.SessionAuthentication):
    """Django session login (the admin's, used by the interactive docs).

    A CSRF failure is its own code, not a scope refusal: the caller fixes it by sending
    the CSRF token, not by asking for another scope.
    """

    def enforce_csrf(self, request):
        try:
            super().enforce_csrf(request)
        except exceptions.PermissionDenied as exc:
            raise CsrfFailed("CSRF verification failed; send the CSRF token.") from exc
