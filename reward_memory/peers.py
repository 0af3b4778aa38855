"""Who an allowlisted (Goal, Agent) is at a corpus's provider (pure reads of the
corpus row and the provider registry; no query).

Shared by the selectors and the experiment config check, below both of them.
"""

from reward_memory import providers
from reward_memory.domain.privacy import agent_key
from reward_memory.models import Corpus


def binding_peer(corpus: Corpus, goal_id: str | None, agent_id: str | None) -> str | None:
    """The actor peer of the operator-configured binding for this (Goal, Agent): the
    allowlist row's ``actor_peer_id``, else what the corpus's provider derives for the
    pair (``Provider.actor_peer_for``). Never read from a URI or a request."""
    if not goal_id or not agent_id:
        return None
    configured = (corpus.agent_peers or {}).get(agent_key(goal_id, agent_id))
    if configured:
        return configured
    try:
        return providers.get(corpus.provider_id).actor_peer_for(goal_id, agent_id)
    except providers.ProviderUnavailable:
        return None
