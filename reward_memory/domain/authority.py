"""Authority rules that are pure data: the forbidden authority families and the value a
verified checkpoint contributes to a guard.

Content may be derived; authority never is. A standing policy, an authority checkpoint
and a candidate derived from feedback may never name an action scope of these families,
whatever a document says. The decision is by normalised meaning, not by spelling: a
scope is cut into words (on ``.``, ``_``, ``-``, ``:``, ``/`` and camelCase, so
``repoWrite`` is ``repo write``), each word reduced to its stem (``pushing`` → ``push``,
``merging`` → ``merge``), and a family matches when a word's stem is one of its concept
words (``land`` and ``approve`` mean merge, ``ship`` means publish, ``commit`` means
repository write), when an object word meets a destructive verb (``branch.delete``,
``tag_create``), or when a run-together word starts with a family's compound
(``crossgoal``, ``automerge``, ``forcepush``, ``repowrite``).
"""

import re
from dataclasses import dataclass

FORBIDDEN_AUTHORITY_FAMILIES: dict[str, frozenset[str]] = {
    "credentials": frozenset(
        {
            "credential", "secret", "token", "key", "apikey", "password", "passwd",
            "passphrase", "ssh", "gpg", "sign", "signing", "cert", "certificate", "oauth",
            "keychain", "vault",
        }
    ),
    "repository_write": frozenset(
        {
            "write", "push", "commit", "admin", "administer", "administration", "ownership",
            "owner", "collaborator", "rebase", "force", "sudo", "root", "protection",
            "permission",
        }
    ),
    "merge": frozenset({"merge", "automerge", "land", "approve", "approval", "squash"}),
    "publish_release": frozenset(
        {"publish", "release", "upload", "ship", "distribute", "distribution"}
    ),
    "production_deploy": frozenset(
        {"production", "prod", "deploy", "deployment", "rollout", "launch", "live"}
    ),
    "cross_project": frozenset({"cross", "global", "*"}),
}  # fmt: skip

#: An object word of a repository next to one of these verbs is a repository write.
_REPOSITORY_OBJECTS = frozenset(
    {"branch", "tag", "ref", "repo", "repository", "remote", "vcs", "git"}
)
_DESTRUCTIVE_VERBS = frozenset(
    {"delete", "remove", "create", "rename", "update", "transfer", "archive", "reset", "edit",
     "unprotect", "destroy", "drop", "wipe", "overwrite", "modify", "change", "set"}
)  # fmt: skip
#: ``all``/``any``/``every`` of these is a cross-project scope (``any-repo``, ``all_goals``).
_WIDENERS = frozenset({"all", "any", "every", "each", "other"})
_SCOPED_OBJECTS = frozenset(
    {"project", "repo", "repository", "goal", "user", "agent", "org", "organization",
     "tenant", "workspace", "team"}
)  # fmt: skip
#: Run-together words: a word starting with one of these belongs to the family.
_COMPOUNDS = {
    "cross": "cross_project",
    "automerge": "merge",
    "forcepush": "repository_write",
    "repowrite": "repository_write",
    "apikey": "credentials",
    "secret": "credentials",
    "credential": "credentials",
    "password": "credentials",
    "deploy": "production_deploy",
    "publish": "publish_release",
    "merge": "merge",
}
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[^A-Za-z0-9*]+")


def scope_words(scope: str) -> list[str]:
    """The lower-case words of ``scope`` (``repoWrite.now`` → ``repo``, ``write``, ``now``)."""
    words: list[str] = []
    for part in _SEPARATORS.split(scope):
        words.extend(w.lower() for w in _CAMEL.split(part) if w)
    return words


def stems(word: str) -> set[str]:
    """The word and its plausible stems (``pushing``, ``pushes``, ``pushed`` → ``push``;
    ``merging`` → ``merge``; ``shipping`` → ``ship``; ``deploys`` → ``deploy``)."""
    out = {word}
    for suffix in ("ing", "ed", "es", "er", "ers", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 2:
            base = word[: -len(suffix)]
            out |= {base, base + "e"}
            if len(base) >= 3 and base[-1] == base[-2]:
                out.add(base[:-1])
    return out


def forbidden_family(scope: str) -> str | None:
    """The forbidden family ``scope`` belongs to by its normalised meaning, or ``None``."""
    if not isinstance(scope, str):
        return None
    words = scope_words(scope.strip())
    stemmed = [stems(w) for w in words]
    every = set().union(*stemmed) if stemmed else set()
    for family, members in FORBIDDEN_AUTHORITY_FAMILIES.items():
        if every & members:
            return family
    if every & _REPOSITORY_OBJECTS and every & _DESTRUCTIVE_VERBS:
        return "repository_write"
    if every & _WIDENERS and every & _SCOPED_OBJECTS:
        return "cross_project"
    joined = "".join(words)
    for word in [*words, joined]:
        for prefix, family in _COMPOUNDS.items():
            if word.startswith(prefix) and (prefix != "cross" or len(word) > len(prefix)):
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


def checkpoint_state(revoked_at, expires_at, now) -> str:
    """``"live"``, ``"revoked"`` or ``"expired"`` (``expires_at <= now``) of a checkpoint."""
    if revoked_at is not None:
        return "revoked"
    if expires_at is not None and expires_at <= now:
        return "expired"
    return "live"


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
