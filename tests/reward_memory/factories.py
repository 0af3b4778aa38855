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
ROLE_CHECKPOINT_ID = "ckpt-proj-a-maintainer-role"


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


def register(
    corpus_id: str = "prefs", *, policy: bool = True, policy_kwargs=None, route=True, **kwargs
):
    """Register a corpus (and by default its standing policy) through the service; by
    default the Goals it allowlists get a verified experiment routing its surfaces to it."""
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

    row = Corpus.objects.get(corpus_id=corpus_id)
    if route and row.agent_allowlist:
        route_agents(row)
    return row


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
            "checkpoint_ref": f"allowlist:{goal_id}/{agent_id}",
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


def recalled(**kwargs) -> dict:
    """``services.recall(**kwargs)`` rendered as its edges (view, command, MCP tool)
    render it."""
    from reward_memory.documents import recall as recall_documents

    return recall_documents.recall_result(services.recall(**kwargs))


def applied(**kwargs) -> dict:
    """``f.applied(**kwargs)`` rendered as its edges render it."""
    from reward_memory.documents import recall as recall_documents

    return recall_documents.application(services.record_application(**kwargs))


def ingested(**kwargs) -> dict:
    """``f.ingested(**kwargs)`` rendered as its edges (view, command, MCP tool)
    render it."""
    from reward_memory.documents import ingest as ingest_documents

    return ingest_documents.ingest(services.ingest_event(**kwargs))


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


def role_binding(actor: str, role: str, project: str = PROJECT, checkpoint_id: str | None = None):
    """An operator-granted role binding (a checkpoint without action scope): ``actor``
    holds ``role`` in ``project`` — what an advisory source actor/role needs."""
    return services.grant_checkpoint(
        checkpoint_id=checkpoint_id or f"role-{project}-{role}-{actor.split(':')[-1]}",
        project=project,
        actor=actor,
        role=role,
        action_scopes=[],
        operator=op(OWNER),
        execute=True,
    )


def operator_accounts(names=("owner", "reviewer", "retirer")) -> None:
    """The corpus actors as operator accounts holding the Reward Memory operator
    permissions (what the reward_memory conftest's ``authority_rows`` sets up)."""
    from django.contrib.auth import get_user_model

    from reward_memory import principals

    for name in names:
        user, _ = get_user_model().objects.get_or_create(username=name, defaults={"is_staff": True})
        principals.grant_operator_permissions(user)


def op(ref: str):
    """The authenticated operator principal of an account ref (``user:<name>``)."""
    from reward_memory.principals import OPERATOR, Principal, username_of

    return Principal(OPERATOR, username_of(ref))


# -- the experiment registry ----------------------------------------------------------------
def experiment_config(corpora, *, automation=None, profile_mode="function_boundary") -> dict:
    """A ``reward_memory_experiment_config_v1`` routing each corpus's surfaces to it
    (later corpora win a shared surface). ``corpora``: registered ``Corpus`` rows."""
    corpora = list(corpora)
    surfaces: dict[str, str] = {}
    for row in corpora:
        for surface in row.surfaces:
            surfaces[surface] = row.corpus_id
    used = [row for row in corpora if row.corpus_id in surfaces.values()]
    doc = {
        "schema_version": "reward_memory_experiment_config_v1",
        "project_provider_binding": {
            "provider_id": used[-1].provider_id,
            "namespace": "reward_memory",
            "corpus_scopes": [
                {"corpus_id": row.corpus_id, "scope_ref": row.provider_scope_ref} for row in used
            ],
        },
        "corpora": [
            {"corpus": {"corpus_id": row.corpus_id}, "standing_policy": {}} for row in used
        ],
        "surfaces": [
            {
                "surface_id": surface,
                "adapter": "scoped_feedback",
                "corpus_ids": [corpus_id],
                "ingest_corpus_id": corpus_id,
                "recall_profile": {
                    "profile_id": f"{surface.replace('.', '_')}_v1",
                    "mode": profile_mode,
                    "max_queries": 1,
                    "limit": 4,
                },
            }
            for surface, corpus_id in sorted(surfaces.items())
        ],
    }
    if automation is not None:
        doc["automation"] = automation
    return doc


def write_config(relative: str, document) -> bytes:
    """Write a config file under the configured root; returns its bytes."""
    import json

    from reward_memory import experiment_config as cfg

    path = cfg.config_root() / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(document, indent=1) if not isinstance(document, bytes) else document
    data = data.encode() if isinstance(data, str) else data
    path.write_bytes(data)
    return data


def enable_experiment(goal_id: str, agent_ids, config: dict, *, relative: str | None = None):
    """Register a verified experiment binding for the Goal's Agents directly (as a
    committed ``configure_goal --execute`` would leave it, without the canary calls)."""
    from loopx_site.core.models import Goal
    from reward_memory import experiment_config as cfg
    from reward_memory.models import ExperimentBinding

    relative = relative or f"experiments/{goal_id}.json"
    data = write_config(relative, config)
    digest = cfg.config_digest(data)
    receipts = {
        agent_id: {
            "schema_version": "reward_memory_enablement_receipt_v0",
            "status": "verified",
            "goal_id": goal_id,
            "agent_id": agent_id,
            "provider_id": config["project_provider_binding"]["provider_id"],
            "config_digest": digest,
            "writability_verified": True,
            "exact_readback_verified": True,
        }
        for agent_id in agent_ids
    }
    now = clock.now()
    goal = Goal.objects.get(goal_id=goal_id)
    for agent_id in sorted(agent_ids):  # one binding per (Goal, Agent)
        ExperimentBinding.objects.update_or_create(
            goal=goal,
            agent=goal.agents.get(agent_id=agent_id),
            defaults={
                "enabled": True,
                "config_path": relative,
                "config_digest": digest,
                "private_config": False,
                "agent_allowlist": [agent_id],
                "receipts": {agent_id: receipts[agent_id]},
                "created_at": now,
                "updated_at": now,
            },
        )


def route_agents(corpus) -> None:
    """Enable the experiment of every Goal the corpus allowlists, routing the corpus's
    surfaces to it (merged with the Goal's other registered, active corpora of the same
    provider; the corpus registered last wins a shared surface)."""
    from reward_memory.models import Corpus

    goals: dict[str, set[str]] = {}
    for key in corpus.agent_allowlist or []:
        goal_id, agent_id = key.split("/", 1)
        goals.setdefault(goal_id, set()).add(agent_id)
    for goal_id, agent_ids in goals.items():
        others = [
            row
            for row in Corpus.objects.filter(active=True, provider_id=corpus.provider_id)
            .exclude(pk=corpus.pk)
            .order_by("updated_at", "pk")
            if any(k.split("/", 1)[0] == goal_id for k in row.agent_allowlist or [])
        ]
        for row in others:
            for key in row.agent_allowlist:
                if key.split("/", 1)[0] == goal_id:
                    agent_ids.add(key.split("/", 1)[1])
        enable_experiment(goal_id, agent_ids, experiment_config([*others, corpus]))
