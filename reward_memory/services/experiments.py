"""The Reward Memory experiment registry: ``configure_goal`` and ``experiment_status``.

Reward Memory automation is default off and enabled per registered Agent of one Goal.
``configure_goal`` previews with a provider preflight (``preflight_ready``,
``preflight_incomplete`` or ``unavailable``; never a write). Execute performs a fresh,
non-recallable canary write with exact byte readback on every corpus of the config's
route (``Provider.canary``) and only then commits the Agent's own ``ExperimentBinding``
(one per (Goal, Agent): enabled, experimental, relative config path + digest, the
Agent, its verified receipt). Enabling an Agent never changes another Agent's row;
replacing the Agent's own pointer/digest is named in the preview and the result
(``replaces_binding``). A readback mismatch commits nothing.

``experiment_status`` answers LoopX's ``reward_memory_experiment_status_v1`` from
``routes.experiment_route`` (a registry read plus a fresh read of the private config;
no provider call): counts, recall profile ids, effective automation with intent
provenance and the registry role — never a scope ref or a local path.
"""

import uuid
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from loopx_site.core import clock
from loopx_site.core.selectors import get_agent
from reward_memory import experiment_config as cfg
from reward_memory import providers, selectors
from reward_memory.documents import experiments as experiment_documents
from reward_memory.errors import AREA, RewardMemoryError
from reward_memory.models import ExperimentBinding
from reward_memory.peers import binding_peer
from reward_memory.services import routes


# -- status -----------------------------------------------------------------------------
def experiment_status(*, goal_id: str, agent_id: str) -> routes.ExperimentRoute:
    """The registered Agent's experiment route (``documents.experiments.status`` renders
    it as LoopX's ``reward_memory_experiment_status_v1``)."""
    get_agent(goal_id, agent_id, area=AREA)
    return routes.experiment_route(goal_id, agent_id)


# -- configure_goal ---------------------------------------------------------------------
@dataclass(frozen=True)
class Configuration:
    """What ``configure_goal`` did (``documents.experiments.configuration`` renders it):
    ``status`` is ``preview``, ``unavailable``, ``canary_readback_failed`` or
    ``configured``; ``provider`` the preview's provider preflight or the execution's
    canary result; ``summary`` the config's public summary; ``binding`` the committed
    row and ``receipt`` the enablement receipt stored on it (``None`` until committed)."""

    status: str
    goal_id: str
    agent_id: str
    provider: dict[str, Any]
    summary: dict[str, Any]
    binding: ExperimentBinding | None = None
    receipt: dict[str, Any] | None = None


def configure_goal(
    *, goal_id: str, agent_id: str, config_path: str, execute: bool = False
) -> Configuration:
    """Preview (provider preflight) or execute (canary + readback, then commit)."""
    agent = get_agent(goal_id, agent_id, area=AREA)
    relative = cfg.relative_path(config_path)
    data = cfg.read_config_bytes(relative)
    digest = cfg.config_digest(data)
    config = cfg.load_bytes(data)
    rows = cfg.check_registered(config)
    cfg.check_peers(rows, goal_id=goal_id, agent_id=agent_id)
    private = cfg.is_private(rows)
    _check_one_agent(goal_id, agent_id, digest, private)
    bindings = [
        (
            corpus_id,
            selectors.provider_binding(
                rows[corpus_id],
                actor_peer_id=binding_peer(rows[corpus_id], goal_id, agent_id),
            ),
        )
        for corpus_id in config.corpus_ids
    ]
    summary = {
        "config_schema_version": cfg.CONFIG_SCHEMA,
        "config_digest": digest,
        "provider_id": config.provider_id,
        "corpus_count": len(config.corpus_ids),
        "surface_count": len(config.surfaces),
        "recall_profile_ids": config.recall_profile_ids,
        "automation": dict(config.automation),
        "automation_intent": dict(config.automation_intent),
    }
    summary["replaces_binding"] = _replacement(goal_id, agent_id, relative, digest)
    if not execute:
        return Configuration("preview", goal_id, agent_id, _preflight(config, bindings), summary)

    try:
        canaries = _canaries(config, bindings, goal_id, agent_id)
    except providers.ProviderUnavailable as exc:
        return Configuration("unavailable", goal_id, agent_id, {"failure_kind": exc.kind}, summary)
    if not all(r.written and r.readback_verified for _, r in canaries):
        failed = {"failure_kind": "readback_mismatch"}
        return Configuration("canary_readback_failed", goal_id, agent_id, failed, summary)
    now = clock.now()
    # the stored receipt: rendered once, here, and answered as stored
    receipt = experiment_documents.enablement_receipt(agent, config, digest, canaries, now)
    row = _commit_binding(agent, relative, digest, private, receipt, summary, now)
    canary = {"status": "ready", "canary_count": len(canaries)}
    return Configuration("configured", goal_id, agent_id, canary, summary, row, receipt)


def _canaries(config, bindings, goal_id: str, agent_id: str) -> list[tuple[str, Any]]:
    """A fresh canary write with exact readback on every corpus of the route (never a
    replay of an old one): ``(corpus_id, CanaryResult)`` each."""
    nonce = uuid.uuid4().hex
    provider = providers.get(config.provider_id)
    return [
        (
            corpus_id,
            provider.canary(binding, canary_ref=f"canary:{goal_id}/{agent_id}/{corpus_id}/{nonce}"),
        )
        for corpus_id, binding in bindings
    ]


def _commit_binding(agent, relative: str, digest: str, private: bool, receipt, summary, now):
    """Write the Agent's own registry row (enabled, the config pointer and digest, its
    verified receipt); ``summary["replaces_binding"]`` is re-read under the row lock."""
    agent_id = agent.agent_id
    with transaction.atomic():
        # one row per (Goal, Agent) (unique): a racing first enablement is re-read, then
        # locked; only this Agent's row is ever written — another Agent's route never moves
        row, created = ExperimentBinding.objects.get_or_create(
            goal=agent.goal,
            agent=agent,
            defaults={
                "enabled": True,
                "config_path": relative,
                "config_digest": digest,
                "private_config": private,
                "agent_allowlist": [agent_id],
                "receipts": {agent_id: receipt},
                "created_at": now,
                "updated_at": now,
            },
        )
        row = ExperimentBinding.objects.select_for_update().get(pk=row.pk)
        # re-check under the row lock: a concurrent enablement of another Agent loses
        _check_one_agent(agent.goal.goal_id, agent_id, digest, private)
        if not created:
            summary["replaces_binding"] = _replaced(row, relative, digest)
            ExperimentBinding.objects.filter(pk=row.pk).update(
                enabled=True,
                config_path=relative,
                config_digest=digest,
                private_config=private,
                agent_allowlist=[agent_id],
                receipts={agent_id: receipt},
                revision=row.revision + 1,
                updated_at=now,
            )
            row.refresh_from_db()
    return row


def _replaced(row, relative: str, digest: str) -> dict[str, Any] | None:
    """What re-enabling an Agent replaces in its *own* binding (``None``: the same
    pointer and digest, a re-verification)."""
    if row.config_path == relative and row.config_digest == digest:
        return None
    return {
        "agent_id": row.agent.agent_id,
        "binding_revision": row.revision,
        "config_digest": row.config_digest,
        "new_config_digest": digest,
        "config_pointer_changed": row.config_path != relative,
        "enabled": row.enabled,
    }


def _replacement(goal_id: str, agent_id: str, relative: str, digest: str):
    row = selectors.experiment_binding(goal_id, agent_id)
    return _replaced(row, relative, digest) if row is not None else None


def _check_one_agent(goal_id, agent_id, digest, private) -> None:
    """One private config binds exactly one Goal-scoped Agent."""
    if not private:
        return
    rows = ExperimentBinding.objects.filter(config_digest=digest).select_related("goal", "agent")
    for row in rows:
        others = [
            a for a in row.agent_allowlist or [] if (row.goal.goal_id, a) != (goal_id, agent_id)
        ]
        if others or (row.goal.goal_id, row.agent.agent_id) != (goal_id, agent_id):
            raise RewardMemoryError(
                "config_binds_one_agent",
                "This private config already binds another Agent; give each Agent its own "
                "private config (a private provider binding is never shared).",
                field="reward_memory_agent",
            )


def _preflight(config, bindings) -> dict[str, Any]:
    statuses, failure = [], None
    try:
        provider = providers.get(config.provider_id)
        for _, binding in bindings:
            result = provider.preflight(binding)
            statuses.append(result.status)
            failure = failure or result.failure_kind
    except providers.ProviderUnavailable as exc:
        return {"status": "unavailable", "failure_kind": exc.kind}
    if any(s == "unavailable" for s in statuses):
        return {"status": "unavailable", "failure_kind": failure or "unavailable"}
    if all(s == "ready" for s in statuses):
        return {"status": "preflight_ready"}
    return {"status": "preflight_incomplete"}
