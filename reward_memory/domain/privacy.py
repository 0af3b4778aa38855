"""The privacy rule: which (Goal, Agent) may read a corpus (pure: a corpus's
``privacy`` and ``agent_allowlist`` fields in, a decision out; no query).

The selectors filter with it (``selectors.list_corpora``, ``get_corpus``,
``readable_records``, ``recall_read``); the admin shows ``visibility_summary``.
"""

from typing import Any

PRIVATE = "private"
GOAL_SHARED = "goal_shared"
PROJECT = "project"
VISIBILITIES = (PRIVATE, GOAL_SHARED, PROJECT)

Viewer = tuple[str, str | None] | None  # ``loopx_site.core.access.Viewer``


def agent_key(goal_id: str, agent_id: str) -> str:
    """The allowlist / peer-map key of one (Goal, Agent)."""
    return f"{goal_id}/{agent_id}"


def is_allowlisted(corpus: Any, goal_id: str, agent_id: str) -> bool:
    return agent_key(goal_id, agent_id) in (corpus.agent_allowlist or [])


def goal_allowlisted(corpus: Any, goal_id: str) -> bool:
    return any(k.split("/", 1)[0] == goal_id for k in corpus.agent_allowlist or [])


def visibility_of(corpus: Any) -> str:
    """The corpus's visibility; anything unknown (or a legacy value) reads as
    ``private`` — the narrowest rule, never a wider one."""
    visibility = (corpus.privacy or {}).get("visibility", PRIVATE)
    return visibility if visibility in VISIBILITIES else PRIVATE


def private_owner(corpus: Any) -> str | None:
    """The one ``goal/agent`` a private corpus belongs to; ``None`` when its allowlist
    does not hold exactly one entry (then nobody reads it from a host scope)."""
    keys = corpus.agent_allowlist or []
    return keys[0] if len(keys) == 1 else None


def shared_goal(corpus: Any) -> str | None:
    """The one Goal a ``goal_shared`` corpus is shared inside (every allowlist entry's
    Goal), or ``None`` when the entries name none or several."""
    goals = {k.split("/", 1)[0] for k in corpus.agent_allowlist or []}
    return goals.pop() if len(goals) == 1 else None


def may_read_corpus(corpus: Any, goal_id: str, agent_id: str | None) -> bool:
    """The one rule for reading a corpus from a Goal/Agent scope.

    * ``private`` — exactly one allowlisted (Goal, Agent), and the reader is that exact
      Agent (its own token, or the in-process identity): never a sibling, never a
      Goal-wide token (``agent_id=None``), never two Agents.
    * ``goal_shared`` — shared inside one Goal with the Agents its allowlist names: an
      allowlisted Agent, or a Goal-wide token of that Goal. Never implied by private.
    * ``project`` — every Agent of an allowlisted Goal.

    Another Goal never reads it.
    """
    visibility = visibility_of(corpus)
    if visibility == PRIVATE:
        owner = private_owner(corpus)
        return agent_id is not None and owner == agent_key(goal_id, agent_id)
    if visibility == GOAL_SHARED:
        if shared_goal(corpus) != goal_id:
            return False
        return agent_id is None or is_allowlisted(corpus, goal_id, agent_id)
    return goal_allowlisted(corpus, goal_id)


def visible_to(corpus: Any, viewer: Viewer) -> bool:
    """Whether ``viewer`` (``(goal_id, agent_id|None)``; ``None``: operator) may see it."""
    return viewer is None or may_read_corpus(corpus, *viewer)


def visibility_summary(corpus: Any) -> str:
    """One line for the admin: the visibility the read rule applies and who it admits."""
    visibility = visibility_of(corpus)
    if visibility == PRIVATE:
        owner = private_owner(corpus)
        return f"private: {owner}" if owner else "private: no single Agent (nobody reads)"
    if visibility == GOAL_SHARED:
        goal = shared_goal(corpus)
        count = len(corpus.agent_allowlist or [])
        return f"goal_shared: {count} Agent(s) of {goal}" if goal else "goal_shared: unreadable"
    goals = sorted({k.split("/", 1)[0] for k in corpus.agent_allowlist or []})
    return f"project: every Agent of {', '.join(goals) or 'no Goal'}"
