"""The one place the MCP server touches the kernel's caller resolver.

A call carries a host token secret (``LOOPX_MCP_TOKEN`` on stdio, the ``Authorization``
header on HTTP). Every tool call resolves it again through the API's own authentication
(``HostTokenAuthentication``) and the one resolver (``access.from_request``), so a token
revoked mid-session is refused on its next call, and the scope is the token's, never an
argument's. Throttles are the API's (``CredentialScopedRateThrottle``), counted per token
in the same shared store.
"""

import contextvars
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from rest_framework import exceptions

from loopx_site.core import access
from loopx_site.core.api.auth import HostTokenAuthentication
from loopx_site.core.api.throttles import CredentialScopedRateThrottle
from loopx_site.core.errors import DomainError

AREA = "loopx"
NOT_IN_SCOPE = "No such Goal or Agent in this token's scope."

#: How the call being served proves its credential (set by the transport, read by every
#: tool): on HTTP the credential the view verified for this very request; on stdio a
#: fresh resolution of ``LOOPX_MCP_TOKEN`` on every call (a long session sees revocation).
current_resolver: contextvars.ContextVar[Callable[[], "Credential"] | None] = (
    contextvars.ContextVar("loopx_mcp_resolver", default=None)
)


@dataclass(frozen=True)
class Credential:
    """A verified host token: its ``access.Caller`` (what the API authenticates it as, and
    the one identity every tool acts with) and the token's credential for the throttles."""

    caller: access.Caller
    token: Any


def _authenticate(authorization: str) -> Credential | None:
    request = SimpleNamespace(
        META={"HTTP_AUTHORIZATION": authorization}, headers={"authorization": authorization}
    )
    try:
        found = HostTokenAuthentication().authenticate(request)
    except exceptions.AuthenticationFailed as exc:
        raise DomainError("not_authenticated", str(exc.detail), area=AREA) from None
    if found is None:
        return None
    principal, token = found
    caller = access.from_request(SimpleNamespace(user=principal, auth=token), area=AREA)
    return Credential(caller, token)


def from_authorization(header: str | None) -> Credential:
    """The credential of an ``Authorization`` header, or ``not_authenticated`` (401)."""
    credential = _authenticate(header) if header else None
    if credential is None:
        raise DomainError(
            "not_authenticated", "Send Authorization: Bearer <host token>.", area=AREA
        )
    return credential


def from_secret(secret: str | None) -> Credential:
    """The credential of a bare token secret, or ``not_authenticated`` (401)."""
    if not secret or any(ch.isspace() for ch in secret):
        raise DomainError("not_authenticated", "A host token is required.", area=AREA)
    return from_authorization(f"Bearer {secret}")


def current() -> Credential:
    """The credential of the call being served (``not_authenticated`` without one)."""
    resolve = current_resolver.get()
    if resolve is None:
        raise DomainError("not_authenticated", "A host token is required.", area=AREA)
    return resolve()


def throttle(credential: Credential, scope: str | None) -> None:
    """The API's per-token limit of ``scope`` (``throttled``, 429, when spent)."""
    if not scope:
        return
    limiter = CredentialScopedRateThrottle()
    request = SimpleNamespace(method="POST", user=credential.caller, auth=credential.token)
    if limiter.allow_request(request, SimpleNamespace(throttle_scope=scope)):
        return
    wait = int(limiter.wait() or 1)
    raise DomainError(
        "throttled",
        f"Too many {scope} calls for this token; retry in {wait} s.",
        details={"retry_after": wait},
        area=AREA,
    )


def acting(credential: Credential, goal_id: Any, agent_id: Any, *, area: str) -> access.Caller:
    """The (Goal, Agent) a call acts for: the token's own scope. A Goal-wide token names
    one of its Agents; naming anything outside the token's scope answers exactly like a
    Goal or Agent that does not exist."""
    from loopx_site.core.models import Agent

    try:
        result = credential.caller.acting_for(goal_id, agent_id, area=area)
    except DomainError as err:
        if err.code != "scope_forbidden":
            raise
        raise _not_in_scope(agent_id, area) from None
    # An Agent token's own Agent exists (the token row points at it); an Agent a
    # Goal-wide token names may not.
    if credential.caller.agent_id is None and not (
        Agent.objects.filter(goal__goal_id=result.goal_id, agent_id=result.agent_id).exists()
    ):
        raise _not_in_scope(agent_id, area)
    return result


def _not_in_scope(agent_id: Any, area: str) -> DomainError:
    field = "agent_id" if agent_id is not None else "goal_id"
    return DomainError("resource_not_found", NOT_IN_SCOPE, field=field, area=area)
