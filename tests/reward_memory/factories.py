"""Builders for Reward Memory test documents and registered corpora.

Documents are plain dicts (the contracts are JSON); corpora are registered through the
real service so every test exercises the same path as the CLI and API.
"""

import copy
import datetime as dt

from loopx_site.core import clock
from reward_memory import services

NOW = dt.datetime(2026, 12, 1, 12, 0, 0, tzinfo=dt.UTC)
OBSERVED = "2026-11-30T09:00:00Z"
PROJECT = "proj-a"
SURFACE = "issue_fix.pr_description"
OWNER = "user:owner"
REVIEWER = "user:reviewer"
AUTHORITY = "repo:proj-a/maintainers"
RETIRER = "user:retirer"
CHECKPOINT_ID = "ckpt-proj-a-1"


def corpus_doc(
    corpus_id: str = "prefs",
    *,
    memory_class: str = "soft_preference",
    surfaces: list[str] | None = None,
    provider_id: str = "local",
    scope_ref: str | None = None,
    agents: list[tuple[str, str]] | None = None,
    max_age_days: int | None = None,
    project: str = PROJECT,
    visibility: str = "project",
) -> dict:
    return {
        "schema_version": "reward_memory_corpus_v0",
        "corpus_id": corpus_id,
        "memory_class": memory_class,
        "owner": OWNER,
        "reviewer": REVIEWER,
        "authority_source": AUTHORITY,
        "maintenance": {"retirement_authority": RETIRER},
        "project": project,
        "surfaces": surfaces or [SURFACE],
        "freshness": {"max_source_age_days": max_age_days, "require_current_revision": True},
        "privacy": {"visibility": visibility, "retention_class": "standard"},
        "provider_binding": {
            "provider_id": provider_id,
            "scope_ref": scope_ref or f"{provider_id}:{corpus_id}",
        },
        "agent_allowlist": [
            {"goal_id": a[0], "agent_id": a[1], **({"actor_peer_id": a[2]} if len(a) > 2 else {})}
            for a in (agents or [])
        ],
    }


def policy_doc(
    corpus_id: str = "prefs",
    *,
    memory_class: str = "soft_preference",
    surface: str = SURFACE,
    source_kinds: list[str] | None = None,
    roles: list[str] | None = None,
    action_scopes: list[str] | None = None,
    project: str = PROJECT,
) -> dict:
    return {
        "schema_version": "reward_memory_standing_policy_v0",
        "corpus_id": corpus_id,
        "owner": OWNER,
        "reviewer": REVIEWER,
        "authority_source": AUTHORITY,
        "project": project,
        "surface": surface,
        "memory_class": memory_class,
        "allowed_source_kinds": source_kinds or ["maintainer_feedback"],
        "verified_actor_roles": roles or ["maintainer", "core_contributor"],
        "action_scopes": action_scopes or [],
    }


def register(corpus_id: str = "prefs", *, policy: bool = True, policy_kwargs=None, **kwargs):
    """Register a corpus (and by default its standing policy) through the service."""
    memory_class = kwargs.get("memory_class", "soft_preference")
    surfaces = kwargs.get("surfaces") or [SURFACE]
    policies = []
    if policy:
        policies = [
            policy_doc(
                corpus_id,
                memory_class=memory_class,
                surface=surfaces[0],
                project=kwargs.get("project", PROJECT),
                **(policy_kwargs or {}),
            )
        ]
    services.register_corpus(
        corpus=corpus_doc(corpus_id, **kwargs), standing_policies=policies, execute=True
    )
    from reward_memory.models import Corpus

    return Corpus.objects.get(corpus_id=corpus_id)


def candidate(**overrides) -> dict:
    """A valid soft_preference candidate for ``prefs``/``proj-a``/``SURFACE``."""
    doc = {
        "schema_version": "reward_memory_candidate_v0",
        "target_class": "soft_preference",
        "content_summary": "Lead PR descriptions with the user-visible effect.",
        "reasoning_summary": "Two maintainers asked for the effect first.",
        "source": {
            "kind": "maintainer_feedback",
            "actor": "user:maint-1",
            "actor_role": "maintainer",
            "evidence_ref": "feedback:proj-a/pr/17",
            "observed_at": OBSERVED,
        },
        "scope": {"workspace": "ws", "project": PROJECT, "surface": SURFACE},
        "confidence": {"level": "medium", "basis": "two consistent comments"},
        "requested_action_scopes": [],
        "conflicts": [],
    }
    return merge(doc, overrides)


def hard_policy_candidate(**overrides) -> dict:
    doc = candidate(
        target_class="hard_policy",
        content_summary="Request a reproduction test before patching a storage contract.",
        source={"kind": "maintainer_feedback", "actor_role": "core_contributor"},
        requested_action_scopes=["issue_fix.request_reproduction"],
        authority_checkpoint={
            "checkpoint_ref": CHECKPOINT_ID,
            "verified": True,
            "actor": "user:maint-1",
            "role": "core_contributor",
            "project": PROJECT,
            "action_scopes": ["issue_fix.request_reproduction", "issue_fix.request_changes"],
        },
    )
    return merge(doc, overrides)


def scoped_event(event_id: str = "ev-1", corpus_id: str = "prefs", **overrides) -> dict:
    doc = candidate()
    doc.pop("schema_version")
    doc = {
        "schema_version": "scoped_feedback_reward_memory_event_v0",
        "event_id": event_id,
        "corpus_id": corpus_id,
        **doc,
    }
    return merge(doc, overrides)


def issue_fix_event(**overrides) -> dict:
    doc = {
        "schema_version": "issue_fix_reward_memory_candidate_adapter_v0",
        "event_id": "if-1",
        "corpus_id": "prefs",
        "target_class": "soft_preference",
        "issue_ref": "issue:proj-a#12",
        "workspace": "ws",
        "repository": PROJECT,
        "repository_revision": "rev-1",
        "current_revision": "rev-1",
        "surface": SURFACE,
        "feedback_kind": "maintainer_feedback",
        "contributor": {
            "actor": "user:maint-1",
            "role": "maintainer",
            "evidence_ref": "review:proj-a#12/r-1",
            "observed_at": OBSERVED,
        },
        "content_summary": "Lead PR descriptions with the user-visible effect.",
        "reasoning_summary": "Two maintainers asked for the effect first.",
        "confidence": {"level": "medium", "basis": "two consistent comments"},
        "requested_action_scopes": [],
        "conflicts": [],
    }
    return merge(doc, overrides)


def recall_request(corpus, *, goal_id="demo", agent_id="author", **overrides) -> dict:
    surface = (corpus.surfaces or [SURFACE])[0]
    doc = {
        "schema_version": "reward_memory_recall_request_v0",
        "goal_id": goal_id,
        "agent_id": agent_id,
        "corpus_id": corpus.corpus_id,
        "project": corpus.project,
        "surface": surface,
        "mode": "function_boundary",
        "queries": ["how to write the PR description effect"],
        "limit": 4,
        "read_authority": {
            "checkpoint_ref": "checkpoint:read/1",
            "verified": True,
            "corpus_id": corpus.corpus_id,
            "project": corpus.project,
            "surface": surface,
            "scope": "read",
        },
        "freshness": {"observed_at": clock.iso(clock.now()), "corpus_revision": corpus.revision},
        "conflicts": [],
        "provider_binding_ref": corpus.provider_binding_ref,
    }
    return merge(doc, overrides)


def merge(base: dict, overrides: dict) -> dict:
    """Deep-merge ``overrides`` into a copy of ``base``; a value ``DELETE`` removes a key."""
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        if value is DELETE:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


DELETE = object()


def op(ref: str):
    """The authenticated operator principal of an account ref (``user:<name>``)."""
    from reward_memory.principals import OPERATOR, Principal, username_of

    return Principal(OPERATOR, username_of(ref))
