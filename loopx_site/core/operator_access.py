"""Whether an operator account may do an operator operation: the one rule every service
re-checks, whichever adapter (admin action, staff API session, operator's shell) called it.

An admin action declares the model permission it needs (``@admin.action(permissions=…)``)
so Django hides and refuses it; the service it calls checks the same permission again on
the signed-in account, so a missing declaration never opens the operation.
"""

from dataclasses import dataclass

from django.contrib.auth import get_user_model

from loopx_site.core.errors import DomainError

PERMISSION_REQUIRED = "permission_required"


@dataclass(frozen=True)
class Operator:
    """Who runs an operator-only operation: the operator's shell (``SHELL``, trusted, as
    every ``manage.py`` command is) or a signed-in account (``signed_in(request)``).
    Services take it as a required argument, so no adapter can leave it out."""

    username: str | None = None

    @property
    def is_shell(self) -> bool:
        return self.username is None


SHELL = Operator()


def signed_in(request) -> Operator:
    """The admin's (or a staff API session's) signed-in account."""
    return Operator(request.user.get_username())


def require_operator_permission(
    operator: Operator, permission: str, *, error: type[DomainError] = DomainError
) -> None:
    """The re-check of an operator-only service: the shell may; an account must hold
    ``permission`` (``permission_required`` otherwise)."""
    if not isinstance(operator, Operator):
        raise TypeError("operator must be operator_access.SHELL or signed_in(request)")
    if not operator.is_shell:
        require_account_permission(operator.username, permission, error=error)


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
