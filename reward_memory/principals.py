"""Who is acting: the authenticated principal, never a request field.

* ``operator`` — a Django user account (``user:<username>``): the admin, a staff session
  on the API, or a command run from the operator's shell naming an existing operator
  account (the shell is trusted to act as a named operator account).
* ``host`` — a host token (``host:<prefix>``). A host token is a corpus's owner or
  reviewer only through an operator's ``CorpusRoleBinding``.
"""

from dataclasses import dataclass

from django.contrib.auth import get_user_model

from reward_memory.errors import RewardMemoryError

OPERATOR = "operator"
HOST = "host"


@dataclass(frozen=True)
class Principal:
    kind: str
    name: str
    token_id: int | None = None

    @property
    def actor_ref(self) -> str:
        return f"user:{self.name}" if self.kind == OPERATOR else f"host:{self.name}"

    @property
    def is_operator(self) -> bool:
        return self.kind == OPERATOR


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
            f"--{field.replace('_', '-')} must name an existing operator account.",
            field=field,
        )
    return Principal(OPERATOR, user.get_username())


def from_caller(caller) -> Principal:
    """The principal of a resolved ``loopx_site.core.access.Caller``."""
    if caller.is_operator:
        return Principal(OPERATOR, caller.name)
    return Principal(HOST, caller.name, caller.token_id)


def from_request(request) -> Principal:
    """The principal the API authenticated (host token or staff session), through the
    one caller resolver (``loopx_site.core.access``)."""
    from loopx_site.core import access

    return from_caller(access.from_request(request))
