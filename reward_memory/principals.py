"""Who is acting: the authenticated principal, never a request field.

* ``operator`` — a Django user account (``user:<username>``): the admin, a staff session
  on the API, or a command run from the operator's shell naming an existing operator
  account (the shell is trusted to act as a named operator account).
* ``host`` — a host token (``host:<prefix>``). A host token is a corpus's owner or
  reviewer only through an operator's ``CorpusRoleBinding``.
"""

from django.contrib.auth import get_user_model

from loopx_site.core import access
from loopx_site.core.access import HOST, OPERATOR
from reward_memory.errors import RewardMemoryError

__all__ = ["HOST", "OPERATOR", "Principal"]

#: The one caller type (``loopx_site.core.access.Caller``), under the name Reward Memory's
#: services use for the subject of role bindings and authority checks.
Principal = access.Caller


# The model permission an operator account needs for each operator operation, checked by
# the service (``require_permission``) whatever called it; the admin action that calls the
# service declares the same permission. Host tokens act through role bindings instead.
PERMISSIONS = {
    "revoke_record": "reward_memory.change_memoryrecord",
    "retire_record": "reward_memory.change_memoryrecord",
    "supersede_record": "reward_memory.change_memoryrecord",
    "mark_experience": "reward_memory.change_memoryrecord",
    "operator_control": "reward_memory.change_memoryrecord",
    "grant_checkpoint": "reward_memory.add_authoritycheckpoint",
    "revoke_checkpoint": "reward_memory.revoke_authoritycheckpoint",
    "bind_role": "reward_memory.add_corpusrolebinding",
    "unbind_role": "reward_memory.change_corpusrolebinding",
    "reopen_lineage": "reward_memory.change_lineageclosure",
    "retry_pending_ingest": "reward_memory.change_pendingingest",
    "retry_provider_deletion": "reward_memory.change_providerdeletion",
    "record_validation": "reward_memory.record_reflection_validation",
    "review_queue": "reward_memory.change_reviewqueueitem",
    # the admin's decisions on host and ingest candidates, and the owner's apply of them
    "review_candidate": "reward_memory.change_candidate",
    "apply_review": "reward_memory.change_review",
}


def require_permission(principal: "Principal | None", operation: str) -> None:
    """An operator principal's account must hold the operation's model permission
    (``permission_required``, 403). Host principals are checked by the domain rule."""
    if principal is not None and principal.is_operator:
        access.require_operator_permission(
            principal, PERMISSIONS[operation], error=RewardMemoryError
        )


def require_operator(principal: Principal | None, operation: str) -> Principal:
    """The one rule for operator-only operations: an operator account (never a host
    token: ``operator_required``) holding the operation's model permission
    (``principals.PERMISSIONS``; ``permission_required``)."""
    if principal is None or not principal.is_operator:
        raise RewardMemoryError(
            "operator_required", "Only an operator account may do this.", field="actor"
        )
    require_permission(principal, operation)
    return principal


def grant_operator_permissions(user) -> None:
    """Give an operator account every permission of ``PERMISSIONS`` (only adds; the
    demo's and the evaluation's corpus actors hold them)."""
    from django.contrib.auth.models import Permission

    codenames = {perm.split(".", 1)[1] for perm in PERMISSIONS.values()}
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="reward_memory", codename__in=codenames)
    )


def username_of(ref: str) -> str:
    return ref[len("user:") :] if ref.startswith("user:") else ref


def operator_account(ref: str | None, *, field: str, code: str = "not_authorized") -> Principal:
    """The operator account ``ref`` names (``user:<name>`` or ``<name>``): an existing,
    active staff user. Anything else is ``code`` (403 / exit 2)."""
    name = username_of(ref) if isinstance(ref, str) else ""
    user = (
        get_user_model().objects.filter(username=name, is_active=True, is_staff=True).first()
        if name
        else None
    )
    if user is None:
        raise RewardMemoryError(
            code,
            f"`{field}` must name an existing operator account.",
            field=field,
        )
    return Principal(OPERATOR, user.get_username())


def from_request(request) -> Principal:
    """The principal the API authenticated (host token or staff session): the one caller
    resolver's ``Caller`` (``loopx_site.core.access``)."""
    return access.from_request(request)
