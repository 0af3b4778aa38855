"""Scope checks: a host token reads and writes only its own Goal (and Agent).

Operators — Django accounts holding the explicit ``core.operate_api`` permission, or
superusers — may act on every scope (that is how the interactive API docs work for a
logged-in operator). The staff flag alone grants nothing here: it only opens the admin,
where model permissions decide what an operator sees and changes.
"""

from rest_framework import permissions

from loopx_site.core.api.auth import HostPrincipal
from loopx_site.core.errors import DomainError

OPERATOR_PERMISSION = "core.operate_api"


def is_operator(request) -> bool:
    """An active Django account with ``core.operate_api`` (superusers have every perm)."""
    user = request.user
    if user is None or isinstance(user, HostPrincipal) or not user.is_authenticated:
        return False
    return bool(user.is_active and user.has_perm(OPERATOR_PERMISSION))


class IsHostOrOperator(permissions.BasePermission):
    """Authenticated host token or operator; URL scope checked when present."""

    def has_permission(self, request, view):
        user = request.user
        if user is None or not user.is_authenticated:
            return False
        if not (is_operator(request) or isinstance(user, HostPrincipal)):
            raise DomainError(
                "scope_forbidden",
                "This account lacks the operator API permission (core.operate_api).",
                status=403,
                area=getattr(view, "error_area", "loopx"),
            )
        goal_id = view.kwargs.get("goal_id") if hasattr(view, "kwargs") else None
        if goal_id is not None:
            require_scope(
                request,
                goal_id,
                view.kwargs.get("agent_id"),
                area=getattr(view, "error_area", "loopx"),
            )
        return True


def require_scope(
    request, goal_id: str, agent_id: str | None = None, *, area: str = "loopx"
) -> None:
    """Raise ``scope_forbidden`` (403) unless the caller may act on this Goal/Agent.

    Views whose scope is in the request body call this after parsing it.
    """
    if is_operator(request):
        return
    user = request.user
    if not isinstance(user, HostPrincipal):
        raise DomainError("scope_forbidden", "Outside this token's scope.", status=403, area=area)
    if user.goal_id != goal_id or (
        user.agent_id is not None and agent_id is not None and user.agent_id != agent_id
    ):
        raise DomainError("scope_forbidden", "Outside this token's scope.", status=403, area=area)


def require_goal_wide(request, *, area: str = "loopx") -> None:
    """Refuse an Agent-scoped token on Goal-wide writes (e.g. adding Agents)."""
    user = request.user
    if isinstance(user, HostPrincipal) and user.agent_id is not None:
        raise DomainError(
            "scope_forbidden", "This token is scoped to one Agent.", status=403, area=area
        )


def visible_goal_ids(request) -> list[str] | None:
    """Goal ids the caller may list; ``None`` means all (operator)."""
    if is_operator(request):
        return None
    return [request.user.goal_id]


def require_operator(request, *, area: str = "loopx") -> None:
    """Refuse host tokens (and accounts without the permission) on operator actions."""
    if not is_operator(request):
        raise DomainError(
            "scope_forbidden",
            "This is an operator action; host tokens cannot perform it.",
            status=403,
            area=area,
        )
