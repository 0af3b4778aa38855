"""Host token authentication.

Hosts send ``Authorization: Bearer <token>`` (``Token <token>`` is accepted too). A
token is scoped to one Goal and optionally one Agent; ``request.user`` is the
``access.Caller`` that token proves (``access.host_caller``, the one resolver: one
indexed query) and ``request.auth`` the token's id.
"""

from rest_framework import authentication, exceptions, status

from loopx_site.core import access
from loopx_site.core.errors import DomainError


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
        try:
            caller = access.host_caller(secret)
        except DomainError as exc:  # DRF answers 401 with its WWW-Authenticate header
            raise exceptions.AuthenticationFailed(exc.message) from None
        return caller, caller.token_id

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
