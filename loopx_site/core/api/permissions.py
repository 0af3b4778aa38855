"""Scope checks: a host token reads and writes only its own Goal (and Agent).

Operators — Django accounts holding the explicit ``core.operate_api`` permission, or
superusers — may act on every scope (that is how the interactive API docs work for a
logged-in operator). The staff flag alone grants nothing here: it only opens the admin,
where model permissions decide what an operator sees and changes.

The rule itself lives in ``loopx_site.core.access`` (one resolver for every view,
command and admin action); the helpers below are its request-shaped doors.
"""

from rest_framework import permissions

from loopx_site.core import access
from loopx_site.core.access import OPERATOR_PERMISSION  # noqa: F401  (re-exported)


def is_operator(request) -> bool:
    """An active Django account with ``core.operate_api`` (superusers have every perm)."""
    return access.is_operator_account(request.user)


class IsHostOrOperator(permissions.BasePermission):
    """Authenticated host token or operator; URL scope checked when present."""

    def has_permission(self, request, view):
        user = request.user
        if user is None or not user.is_authenticated:
            return False
        area = getattr(view, "error_area", "loopx")
        caller = access.from_request(request, area=area)
        goal_id = view.kwargs.get("goal_id") if hasattr(view, "kwargs") else None
        if goal_id is not None:
            caller.require(goal_id, view.kwargs.get("agent_id"), area=area)
        return True


def require_scope(
    request, goal_id: str, agent_id: str | None = None, *, area: str = "loopx"
) -> None:
    """Raise ``scope_forbidden`` (403) unless the caller may act on this Goal/Agent.

    Views whose scope is in the request body call this after parsing it.
    """
    access.from_request(request, area=area).require(goal_id, agent_id, area=area)


def require_goal_wide(request, *, area: str = "loopx") -> None:
    """Refuse an Agent-scoped token on Goal-wide writes (e.g. adding Agents)."""
    access.from_request(request, area=area).require_goal_wide(area=area)


def visible_goal_ids(request) -> list[str] | None:
    """Goal ids the caller may list; ``None`` means all (operator)."""
    return access.from_request(request).visible_goal_ids()


def require_operator(request, *, area: str = "loopx") -> None:
    """Refuse host tokens (and accounts without the permission) on operator actions."""
    access.from_request(request, area=area).require_operator(area=area)
