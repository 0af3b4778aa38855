"""Scope checks: a host token reads and writes only its own Goal (and Agent).

Operators — Django accounts holding the explicit ``core.operate_api`` permission, or
superusers — may act on every scope (that is how the interactive API docs work for a
logged-in operator). The staff flag alone grants nothing here: it only opens the admin,
where model permissions decide what an operator sees and changes.

The rule itself lives in ``loopx_site.core.access`` (one resolver for every view,
command and admin action); this is its one door in DRF's permission check.
"""

from rest_framework import permissions

from loopx_site.core import access


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
