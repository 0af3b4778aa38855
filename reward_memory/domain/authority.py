"""Authority rules that are pure data: the forbidden authority families and the value a
verified checkpoint contributes to a guard.

Content may be derived; authority never is. A standing policy, an authority checkpoint
and a candidate derived from feedback may never name an action scope of these families,
whatever a document says. A scope is split into segments on ``.`` and each segment into
words on ``_``, ``-`` and ``:``; a family matches when any segment *or* any word equals
one of its names, compared case-insensitively (``Repo.Write``, ``release_publish``,
``prod.deploy`` and ``x.cross_project`` are all caught, not only a leading prefix).
"""

import re
from dataclasses import dataclass

FORBIDDEN_AUTHORITY_FAMILIES: dict[str, frozenset[str]] = {
    "credentials": frozenset(
        {
            "credential", "credentials", "secret", "secrets", "token", "tokens", "key", "keys",
            "apikey", "api_key", "password", "passwords", "passwd", "ssh", "gpg", "signing",
        }
    ),
    "repository_write": frozenset(
        {
            "write", "writes", "push", "force_push", "admin", "administer", "administration",
            "ownership", "branch_protection", "collaborators",
        }
    ),
    "merge": frozenset({"merge", "merges", "automerge", "auto_merge"}),
    "publish_release": frozenset(
        {"publish", "publishing", "release", "releases", "upload"}
    ),
    "production_deploy": frozenset(
        {"production", "prod", "deploy", "deploys", "deployment", "deployments", "rollout"}
    ),
    "cross_project": frozenset(
        {
            "cross_project", "cross_repo", "cross_repository", "cross_user", "cross_agent",
            "cross_goal", "all_projects", "all_repos", "any_project", "any_repo", "global",
            "*",
        }
    ),
}  # fmt: skip

_WORD_SPLIT = re.compile(r"[_:\-]+")


def forbidden_family(scope: str) -> str | None:
    """The forbidden family ``scope`` belongs to, or ``None`` (case-insensitive, every
    segment and every word of a segment)."""
    if not isinstance(scope, str):
        return None
    lowered = scope.strip().lower()
    names: set[str] = set()
    for segment in lowered.split("."):
        names.add(segment)
        names.add(_WORD_SPLIT.sub("_", segment))
        names.update(w for w in _WORD_SPLIT.split(segment) if w)
    for family, members in FORBIDDEN_AUTHORITY_FAMILIES.items():
        if names & members:
            return family
    return None


def normalise_scopes(scopes) -> set[str]:
    """Action scopes compare case-insensitively."""
    return {s.lower() for s in scopes or [] if isinstance(s, str)}


@dataclass(frozen=True)
class CheckpointFacts:
    """What the server verified about one ``AuthorityCheckpoint`` (read from the
    database, never from a request document)."""

    checkpoint_id: str
    project: str
    actor: str
    role: str
    action_scopes: frozenset[str]
    live: bool
    state: str  # "live" | "revoked" | "expired"


#: How a server record binds a source actor to a role (``RoleBinding.basis``).
ROLE_BASIS_CHECKPOINT = "authority_checkpoint"
ROLE_BASIS_OPERATOR = "operator_account"
ROLE_BASIS_CORPUS_ROLE = "corpus_role_binding"
OPERATOR_ROLE = "operator"


@dataclass(frozen=True, order=True)
class RoleBinding:
    """A server record binding ``actor`` to ``role`` (resolved by the server, never read
    from a request): a live ``AuthorityCheckpoint`` of the project (``ref``: its id), the
    authenticated operator account (role ``operator``; ``ref``: the account), or a corpus
    role the authenticated principal holds (an operator account equal to the corpus's
    declared actor, or a host token an operator bound with ``CorpusRoleBinding``; the
    actor is the corpus's declared actor of that role, ``ref`` the role)."""

    actor: str
    role: str
    basis: str
    ref: str

    def payload(self) -> dict[str, str]:
        return {"actor": self.actor, "role": self.role, "basis": self.basis, "ref": self.ref}
