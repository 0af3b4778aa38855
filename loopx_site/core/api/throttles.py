"""Per-credential rate limits for the expensive API operations.

A view opts in with ``throttle_scope = "<scope>"``; the rate of each scope is
``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"][scope]`` (set from the environment in
settings). The budget belongs to the authenticated credential — one host token, or one
operator account — never to an IP address, so hosts behind one proxy do not share a
budget and one token cannot spread its calls over many addresses.

A refused call is the ``throttled`` envelope (429) with ``Retry-After``.
"""

from django.core.exceptions import ImproperlyConfigured
from rest_framework.settings import api_settings
from rest_framework.throttling import ScopedRateThrottle

from loopx_site.core.api.auth import HostPrincipal

#: The scopes views may name; settings give each a rate.
SCOPES = ("recall", "doctor", "ingest", "turn_recall")


def credential_ident(request) -> str | None:
    """A stable key of the authenticated credential, or ``None`` when there is none."""
    user = request.user
    if isinstance(user, HostPrincipal) and request.auth is not None:
        return f"token:{request.auth.pk}"
    if user is not None and getattr(user, "is_authenticated", False):
        return f"user:{user.pk}"
    return None


class CredentialScopedRateThrottle(ScopedRateThrottle):
    """``ScopedRateThrottle`` keyed by the credential; rates read at call time."""

    cache_format = "loopx_throttle:%(scope)s:%(ident)s"

    def get_rate(self):
        # Read the live setting (tests and operators may change it without a restart of
        # the class): DRF's own class attribute is frozen at import time.
        rates = api_settings.DEFAULT_THROTTLE_RATES
        if self.scope not in rates:
            raise ImproperlyConfigured(f"No throttle rate is set for the scope {self.scope!r}.")
        return rates[self.scope]  # None: that scope is not limited

    def get_cache_key(self, request, view):
        ident = credential_ident(request)
        if ident is None:  # unauthenticated calls never reach a throttled view
            return None
        return self.cache_format % {"scope": self.scope, "ident": ident}
