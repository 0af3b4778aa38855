"""Who holds a role on a corpus, and which server records bind a source actor or a
reader: the role rules, in one place (the reads they need are ``selectors``).

``acts_as`` decides every role check of the services (review, apply, retire, revoke,
ranking, registration); ``source_role_bindings`` feeds the guards
(``domain.guards.source_binding``); ``read_authority_record`` decides a recall's
``read_authority``; ``owner_write_peer`` the peer an owner's write uses.
"""

from typing import Any

from loopx_site.core import clock
from reward_memory import contracts as c
from reward_memory import selectors
from reward_memory.domain import authority, privacy, uris
from reward_memory.models import Corpus
from reward_memory.peers import binding_peer
from reward_memory.principals import Principal

ROLE_FIELDS = {
    c.OWNER_ROLE: "owner",
    c.REVIEWER_ROLE: "reviewer",
    c.RETIREMENT_ROLE: "retirement_authority",
    c.AUTHORITY_SOURCE_ROLE: "authority_source",
}


def acts_as(principal: Principal | None, corpus: Corpus, role: str) -> bool:
    """Whether the authenticated ``principal`` holds ``role`` on ``corpus``: an operator
    account equal to the corpus's declared actor, or a host token an operator bound to
    that role (live ``CorpusRoleBinding``)."""
    if principal is None:
        return False
    if principal.is_operator:
        return principal.actor_ref == getattr(corpus, ROLE_FIELDS[role])
    return selectors.holds_bound_role(corpus, role, principal.token_id)


def source_role_bindings(
    corpus: Corpus, principal: Principal | None = None, *, now=None
) -> frozenset[authority.RoleBinding]:
    """The server records that may bind a candidate's claimed source actor to its role,
    for an activation into ``corpus`` by the authenticated ``principal`` (``None``: no
    principal, e.g. the demo loader or an internal retry — checkpoints only):

    * every live (unrevoked, unexpired) ``AuthorityCheckpoint`` of the corpus's project
      (``checkpoint.actor`` holds ``checkpoint.role``);
    * an operator account: itself as role ``operator``;
    * each corpus role the principal holds (``acts_as``: an operator account equal to the
      declared actor, or a host token an operator bound with ``CorpusRoleBinding``) —
      the actor is the corpus's declared actor of that role: the bound role speaks,
      never the token's own claim.
    """
    now = now or clock.now()
    bindings = {
        authority.RoleBinding(actor, role, authority.ROLE_BASIS_CHECKPOINT, checkpoint_id)
        for checkpoint_id, actor, role in selectors.live_checkpoints(corpus.project, now=now)
    }
    if principal is not None and principal.is_operator:
        bindings.add(
            authority.RoleBinding(
                principal.actor_ref,
                authority.OPERATOR_ROLE,
                authority.ROLE_BASIS_OPERATOR,
                principal.actor_ref,
            )
        )
    for role, field_name in ROLE_FIELDS.items():
        if acts_as(principal, corpus, role):
            bindings.add(
                authority.RoleBinding(
                    getattr(corpus, field_name), role, authority.ROLE_BASIS_CORPUS_ROLE, role
                )
            )
    return frozenset(bindings)


# -- read authority: a server record, never the caller's claim ------------------------------
READ_ROLE = "reader"
READ_SCOPE = "reward_memory.read"
ALLOWLIST_REF_PREFIX = "allowlist:"


def allowlist_read_ref(goal_id: str, agent_id: str) -> str:
    """The read-authority ref naming the caller's own corpus allowlist entry."""
    return f"{ALLOWLIST_REF_PREFIX}{privacy.agent_key(goal_id, agent_id)}"


def reader_actor(goal_id: str, agent_id: str) -> str:
    """The ``actor`` an operator's read checkpoint binds for one (Goal, Agent)."""
    return f"agent:{privacy.agent_key(goal_id, agent_id)}"


def read_authority_record(
    ref: Any, *, corpus: Corpus, surface: str, goal_id: str, agent_id: str, now=None
) -> str | None:
    """The server record a recall's ``read_authority.checkpoint_ref`` names for this
    (Goal, Agent) on this corpus and surface: ``"allowlist"`` — ``allowlist:<goal>/<agent>``
    and the corpus allowlists exactly that caller — or ``"checkpoint"`` — a live
    ``AuthorityCheckpoint`` an operator granted with role ``reader``, actor
    ``agent:<goal>/<agent>``, the corpus's project and the action scope
    ``reward_memory.read`` (or ``reward_memory.read.<surface>``). Anything else
    (unknown ref, another caller's entry, a revoked/expired or non-read checkpoint) is
    ``None``; the caller's ``verified`` flag never counts."""
    if not isinstance(ref, str) or not ref:
        return None
    if ref.startswith(ALLOWLIST_REF_PREFIX):
        if ref == allowlist_read_ref(goal_id, agent_id) and privacy.is_allowlisted(
            corpus, goal_id, agent_id
        ):
            return "allowlist"
        return None
    facts = selectors.checkpoint_facts(ref, now=now)
    if (
        facts is None
        or not facts.live
        or facts.role != READ_ROLE
        or facts.actor != reader_actor(goal_id, agent_id)
        or facts.project != corpus.project
        or not facts.action_scopes & {READ_SCOPE, f"{READ_SCOPE}.{surface}".lower()}
    ):
        return None
    return "checkpoint"


def owner_write_peer(corpus: Corpus) -> str | None:
    """The peer an owner's write (apply review) uses on a peer-scoped corpus: the
    configured peer of an allowlisted Agent equal to the scope's peer, if any."""
    uri_peer = uris.peer_of(corpus.provider_scope_ref)
    if uri_peer is None:
        return None
    for key in corpus.agent_allowlist or []:
        goal_id, agent_id = key.split("/", 1)
        if binding_peer(corpus, goal_id, agent_id) == uri_peer:
            return uri_peer
    return None
