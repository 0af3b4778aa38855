"""Whether an operator account may do an operator operation: the one rule every service
re-checks, whichever adapter (admin action, staff API session, operator's shell) called it.

An admin action declares the model permission it needs (``@admin.action(permissions=…)``)
so Django hides and refuses it; the service it calls checks the same permission again on
the signed-in account, so a missing declaration never opens the operation.
"""

from django.contrib.auth import get_user_model

from loopx_site.core.errors import DomainError

PERMISSION_REQUIRED = "permission_required"


def require_account_permission(
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
