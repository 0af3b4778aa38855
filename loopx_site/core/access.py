"""Who is calling and what they may touch: the one resolver every adapter uses.

A caller is one of two principals:

* **operator** — a Django account holding ``core.operate_api`` (or a superuser) on the
  API, a signed-in account in the admin, or the operator's shell running a command
  (``SHELL``). Operators may act on every Goal and Agent.
* **host** — a host token (``host_caller``; on the API ``request.user``): one Goal and,
  optionally, one Agent of it. It touches only that Goal (and that Agent).

For an Agent-scoped operation (recall, ingest, turn recall, settle) ``acting_for``
answers which (Goal, Agent) the call acts for — as a ``Caller`` too, the same principal
narrowed to that Goal and Agent (``goal_id``, ``agent_id``, ``viewer``, ``own_agent``):

* an Agent-scoped token acts for its own Agent; a body naming another Goal or Agent is
  ``scope_forbidden`` (403);
* a Goal-wide token names one Agent of its Goal (the operation allows it) and acts for
  it, but it *reads as the Goal*: its acting caller's ``viewer`` is ``(goal_id, None)``
  (``named_agent``), so it never reaches a ``private`` corpus by naming an Agent —
  private reads need the Agent's own token or an operator;
* an operator names both, and reads everything (``viewer`` is ``None``).

What a caller may not see answers exactly like what does not exist:
``visible_or_not_found`` is the one door for id lookups (same status, code, message).

Operator-only operations (admin actions, the operator's shell) take the operator's
``Caller`` (``SHELL``, or ``signed_in(request)`` for a signed-in account) and re-check the
account's model permission with ``require_operator_permission`` inside the service,
whatever the adapter declared.

``Caller`` is the one identity type: API views, commands, admin actions, the MCP server
and services all take it (``reward_memory.principals.Principal`` is the same class).
Outside DRF a host token's secret becomes its caller through ``host_caller``.
"""

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from django.contrib.auth import get_user_model

from loopx_site.core import selectors
from loopx_site.core.errors import DomainError

OPERATOR = "operator"
HOST = "host"
OPERATOR_PERMISSION = "core.operate_api"
OUTSIDE_SCOPE = "Outside this token's scope."

# (goal_id, agent_id | None): the read scope a caller proved; ``None`` means operator.
Viewer = tuple[str, str | None] | None

T = TypeVar("T")


def _forbidden(message: str, area: str) -> DomainError:
    # A token's scope is the edge's concern (area ``loopx``, like 401): one 403 document
    # on every route, whichever app's area ``area`` names.
    return DomainError("scope_forbidden", message, area="loopx")


def _optional_id(value: Any, field: str, area: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise DomainError(
            "invalid_argument", f"{field} must be a non-empty string", field=field, area=area
        )
    return value


@dataclass(frozen=True)
class Caller:
    """The authenticated principal of one call. A host token's caller is also the API
    request's ``request.user`` (DRF asks it the attributes below)."""

    kind: str
    name: str
    goal_id: str | None = None  # a host token's Goal
    agent_id: str | None = None  # a host token's Agent (None: Goal-wide)
    token_id: int | None = None
    from_shell: bool = False  # the operator's shell (trusted, as every ``manage.py`` command is)
    # A Goal-wide token acting for an Agent it named (``acting_for``): ``agent_id`` is that
    # Agent, but the credential never proved it, so the caller still reads as the Goal.
    named_agent: bool = False

    is_authenticated = True
    is_anonymous = False
    is_staff = False
    is_active = True

    def __str__(self) -> str:
        return self.actor_ref

    @property
    def is_operator(self) -> bool:
        return self.kind == OPERATOR

    @property
    def actor_ref(self) -> str:
        return f"user:{self.name}" if self.is_operator else f"host:{self.name}"

    @property
    def viewer(self) -> Viewer:
        """The read scope the credential itself proves: ``None`` (operator), the Agent (its
        own token), or the Goal alone (a Goal-wide token, also when it acts for an Agent it
        named — never that Agent's private corpora)."""
        if self.is_operator:
            return None
        return (self.goal_id, None if self.named_agent else self.agent_id)

    @property
    def own_agent(self) -> bool:
        """An operator, or the Agent's own token: may read the Agent's private memory."""
        return self.is_operator or (self.agent_id is not None and not self.named_agent)

    def require_own_agent(self, what: str, *, field: str | None = None, area: str = "loopx"):
        """``scope_forbidden`` (403) unless an operator or the Agent's own token asks:
        ``what`` reaches the Agent's own (possibly private) memory, which a Goal-wide
        token that named the Agent never does."""
        if not self.own_agent:
            raise DomainError(
                "scope_forbidden",
                f"{what} reaches the Agent's own memory: use the Agent's own token.",
                field=field,
                area="loopx",  # the edge's area, as every 401/403 (``_forbidden``)
            )

    def may_touch(self, goal_id: str | None, agent_id: str | None = None) -> bool:
        if self.is_operator:
            return True
        if goal_id != self.goal_id:
            return False
        return self.agent_id is None or agent_id is None or agent_id == self.agent_id

    def require(self, goal_id: str, agent_id: str | None = None, *, area: str = "loopx") -> None:
        """``scope_forbidden`` (403) unless the caller may act on this Goal/Agent."""
        if not self.may_touch(goal_id, agent_id):
            raise _forbidden(OUTSIDE_SCOPE, area)

    def require_operator(self, *, area: str = "loopx") -> None:
        if not self.is_operator:
            raise _forbidden("This is an operator action; host tokens cannot perform it.", area)

    def require_goal_wide(self, *, area: str = "loopx") -> None:
        if not self.is_operator and self.agent_id is not None and not self.named_agent:
            raise _forbidden("This token is scoped to one Agent.", area)

    def visible_goal_ids(self) -> list[str] | None:
        """Goal ids the caller may list; ``None`` means all (operator)."""
        return None if self.is_operator else [self.goal_id]

    def listing_scope(
        self, goal_id: str | None = None, *, area: str = "loopx"
    ) -> tuple[list[str] | None, str | None]:
        """(goal_ids, agent_id) a listing may show, narrowed by an optional ``goal_id``
        filter: a host sees its token's scope only (another Goal is 403)."""
        if self.is_operator:
            return ([goal_id] if goal_id else None), None
        if goal_id is not None:
            self.require(goal_id, area=area)
        return [self.goal_id], self.agent_id

    def acting_for(
        self, goal_id: Any = None, agent_id: Any = None, *, area: str = "loopx"
    ) -> "Caller":
        """This caller narrowed to the (Goal, Agent) an Agent-scoped operation acts for
        (see the module doc). ``goal_id``/``agent_id`` are what the request names
        (``None``: not named)."""
        goal_id = _optional_id(goal_id, "goal_id", area)
        agent_id = _optional_id(agent_id, "agent_id", area)
        if not self.is_operator:
            if goal_id not in (None, self.goal_id):
                raise _forbidden(OUTSIDE_SCOPE, area)
            if self.agent_id is not None and agent_id not in (None, self.agent_id):
                raise _forbidden(OUTSIDE_SCOPE, area)
            goal_id = self.goal_id
            agent_id = self.agent_id or agent_id
        if not goal_id:
            raise DomainError("invalid_argument", "goal_id is required", field="goal_id", area=area)
        if not agent_id:
            message = (
                "agent_id is required for a Goal-wide token"
                if not self.is_operator
                else "agent_id is required"
            )
            raise DomainError("invalid_argument", message, field="agent_id", area=area)
        named = not self.is_operator and (self.named_agent or self.agent_id is None)
        return replace(self, goal_id=goal_id, agent_id=agent_id, named_agent=named)

    def event_scope(
        self, goal_id: Any = None, agent_id: Any = None, *, goal_level: bool, area: str = "loopx"
    ) -> tuple[Any, Any, Viewer]:
        """``(goal_id, agent_id, viewer)`` of an operation that acts for an Agent, or — a
        ``goal_level`` call (read-only) naming a Goal and no Agent — for that Goal alone
        (the caller must reach it). Naming no Goal acts in the caller's own read scope."""
        if not goal_id:
            return goal_id, agent_id, self.viewer
        if goal_level and not agent_id:
            self.require(goal_id, area=area)
            return goal_id, agent_id, self.viewer
        acting = self.acting_for(goal_id, agent_id, area=area)
        return acting.goal_id, acting.agent_id, acting.viewer


# -- resolving the caller ------------------------------------------------------------------
def digest_token(secret: str) -> str:
    """What is stored of a host token's secret (``HostToken.key_digest``)."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def host_caller(secret: str, *, area: str = "loopx") -> Caller:
    """The caller a host token's secret proves (its Goal and, optionally, its Agent), or
    ``not_authenticated`` (401) for an unknown or revoked token. One indexed query; it
    needs no request, so every transport (the API, the MCP server) resolves tokens here."""
    token = selectors.live_token(digest_token(secret))
    if token is None:
        raise DomainError("not_authenticated", "Unknown or revoked token.", area=area)
    return Caller(
        HOST, token.prefix, goal_id=token.goal_id, agent_id=token.agent_id, token_id=token.pk
    )


def _is_operator_account(user) -> bool:
    """An active Django account with ``core.operate_api`` (superusers have every perm)."""
    if user is None or isinstance(user, Caller) or not user.is_authenticated:
        return False
    return bool(user.is_active and user.has_perm(OPERATOR_PERMISSION))


def from_request(request, *, area: str = "loopx") -> Caller:
    """The caller of an API request (cached on the request). A host token authenticates
    as its ``Caller`` (``host_caller``); an account must hold ``core.operate_api``;
    anything else is ``scope_forbidden``."""
    cached = getattr(request, "_loopx_caller", None)
    if cached is not None:
        return cached
    user = request.user
    if isinstance(user, Caller):
        caller = user
    elif _is_operator_account(user):
        caller = Caller(OPERATOR, user.get_username())
    else:
        raise _forbidden("This account lacks the operator API permission (core.operate_api).", area)
    request._loopx_caller = caller
    return caller


# -- one answer for unseen and absent ----------------------------------------------------
def visible_or_not_found(
    obj: T | None, visible: Callable[[T], bool], not_found: Callable[[], DomainError]
) -> T:
    """``obj`` when it exists and the caller may see it; otherwise the *same* error a
    missing one raises (status, code and message), so a foreign id is indistinguishable
    from an absent one."""
    if obj is None or not visible(obj):
        raise not_found()
    return obj


# -- operator-only operations: the permission re-check ---------------------------------
# Whether an operator account may do an operator operation: the one rule every service
# re-checks, whichever adapter (admin action, staff API session, operator's shell) called it.
#
# An admin action declares the model permission it needs (``@admin.action(permissions=…)``)
# so Django hides and refuses it; the service it calls checks the same permission again on
# the signed-in account, so a missing declaration never opens the operation.

PERMISSION_REQUIRED = "permission_required"


# Who runs an operator-only operation: the operator's shell (``SHELL``) or a signed-in
# account (``signed_in(request)``) — both a ``Caller``. Services take it as a required
# argument, so no adapter can leave it out.
SHELL = Caller(OPERATOR, "shell", from_shell=True)


def signed_in(request) -> Caller:
    """The admin's (or a staff API session's) signed-in account (the admin's own model
    permissions, and the service's re-check, decide what it may change)."""
    return Caller(OPERATOR, request.user.get_username())


def require_operator_permission(
    operator: Caller, permission: str, *, error: type[DomainError] = DomainError
) -> None:
    """The re-check of an operator-only service: the shell may; an account must hold
    ``permission`` (``permission_required`` otherwise)."""
    if not isinstance(operator, Caller) or not operator.is_operator:
        raise TypeError("operator must be access.SHELL or signed_in(request)")
    if not operator.from_shell:
        _require_account_permission(operator.name, permission, error=error)


def _require_account_permission(
    username: str, permission: str, *, error: type[DomainError] = DomainError
) -> None:
    """Refuse (``permission_required``, 403, raised as ``error`` — an app's DomainError
    subclass) unless ``username`` is an active staff account holding ``permission``
    (``app_label.codename``; superusers hold every one)."""
    user = (
        get_user_model().objects.filter(username=username, is_active=True, is_staff=True).first()
        if username
        else None
    )
    if user is not None and user.has_perm(permission):
        return
    raise error(
        PERMISSION_REQUIRED,
        f"The operator account user:{username} does not hold the {permission} permission "
        "(granted to the account in the admin's Users page).",
        field="actor",
        details={"permission": permission, "account": f"user:{username}"},
    )
