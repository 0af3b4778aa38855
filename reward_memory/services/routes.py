"""The experiment route: what the experiment registry allows one (Goal, Agent) — the
routing rule, in one place (``experiment_route``, and ``route_corpus_id`` for an
event's corpus).

It reads the registry row (``selectors.experiment_binding``) *and* the private config
file it points to (``experiment_config.read_config_bytes``: file I/O, the digest
compared), so it is a service, not a selector. Other apps (turn recall) call
``reward_memory.services.experiment_route``; it never calls a provider.
"""

from dataclasses import dataclass
from typing import Any

from reward_memory import experiment_config as cfg
from reward_memory import selectors
from reward_memory.domain import privacy
from reward_memory.errors import RewardMemoryError


@dataclass(frozen=True)
class ExperimentRoute:
    """What the experiment registry allows one (Goal, Agent) — resolved from the
    registry row *and* a fresh read of the private config (digest compared)."""

    goal_id: str
    agent_id: str
    status: str
    reason_code: str | None = None
    binding: Any = None
    config: Any = None
    receipt: dict[str, Any] | None = None
    readback_status: str = "not_attempted"

    @property
    def available(self) -> bool:
        return self.status == "available"

    @property
    def automation(self) -> dict[str, bool]:
        if not self.available:
            return {"automatic_recall": False, "automatic_ingest": False, "fail_open": True}
        return dict(self.config.automation)

    def surface(self, surface_id: str | None):
        """The configured surface (``None`` unless available and declared)."""
        if not self.available or not isinstance(surface_id, str):
            return None
        return self.config.surfaces.get(surface_id)


def experiment_route(goal_id: str, agent_id: str, surface: str | None = None) -> ExperimentRoute:
    """The one read of a (Goal, Agent)'s Reward Memory experiment (never a provider call).

    ``available`` only when the Agent's own binding is enabled, allowlists it, the
    private config still reads back with the registered digest, validates as v1 against
    the registered corpora, and the Agent's receipt is verified for that digest. Other
    apps (turn recall) call this; ``route.surface(surface_id)`` gives the configured
    corpora, ingest corpus and recall profile of one surface. ``surface`` (optional)
    narrows ``status`` to ``surface_not_configured`` when that surface is not declared.
    """
    binding = selectors.experiment_binding(goal_id, agent_id)
    base = {"goal_id": goal_id, "agent_id": agent_id, "binding": binding}
    if binding is None:  # another Agent's binding never routes this one
        others = selectors.goal_experiment_bindings(goal_id).filter(enabled=True).exists()
        return ExperimentRoute(status="agent_not_enabled" if others else "disabled", **base)
    if not binding.enabled:
        return ExperimentRoute(status="disabled", **base)
    if agent_id not in (binding.agent_allowlist or []):
        return ExperimentRoute(status="agent_not_enabled", **base)
    try:
        data = cfg.read_config_bytes(binding.config_path)
    except RewardMemoryError:
        return ExperimentRoute(
            status="config_invalid",
            reason_code="config_unavailable_or_invalid",
            readback_status="rejected",
            **base,
        )
    digest = cfg.config_digest(data)
    receipt = (binding.receipts or {}).get(agent_id)
    try:
        config = cfg.load_bytes(data)
        cfg.check_registered(config)
    except RewardMemoryError:
        return ExperimentRoute(
            status="config_invalid",
            reason_code="config_unavailable_or_invalid",
            readback_status="rejected",
            receipt=receipt,
            **base,
        )
    if digest != binding.config_digest or not receipt or receipt.get("config_digest") != digest:
        return ExperimentRoute(
            status="enablement_stale",
            reason_code="config_digest_missing_or_drifted",
            readback_status="drifted",
            config=config,
            receipt=receipt,
            **base,
        )
    if not (
        receipt.get("status") == "verified"
        and receipt.get("goal_id") == goal_id
        and receipt.get("agent_id") == agent_id
        and receipt.get("provider_id") == config.provider_id
        and receipt.get("writability_verified") is True
        and receipt.get("exact_readback_verified") is True
    ):
        return ExperimentRoute(
            status="enablement_unverified",
            reason_code="provider_write_preflight_missing_or_unverified",
            readback_status="unverified",
            config=config,
            receipt=receipt,
            **base,
        )
    if surface is not None and surface not in config.surfaces:
        return ExperimentRoute(
            status="surface_not_configured",
            reason_code="surface_not_in_config",
            readback_status="verified",
            config=config,
            receipt=receipt,
            **base,
        )
    return ExperimentRoute(
        status="available", readback_status="verified", config=config, receipt=receipt, **base
    )


def route_corpus_id(goal_id: str | None, agent_id: str | None, surface: Any) -> str | None:
    """The surface's ``ingest_corpus_id`` in the (Goal, Agent)'s verified experiment
    config; else (a no-write evaluation) the one active corpus that allowlists this exact
    (Goal, Agent) and declares this exact surface, or ``None`` — never a guess among
    several, never by similarity."""
    if not goal_id or not agent_id or not isinstance(surface, str):
        return None
    configured = experiment_route(goal_id, agent_id).surface(surface)
    if configured is not None:  # the Agent's verified experiment names the ingest corpus
        return configured.ingest_corpus_id
    matches = [
        corpus.corpus_id
        for corpus in selectors.active_corpora()
        if privacy.is_allowlisted(corpus, goal_id, agent_id) and surface in (corpus.surfaces or [])
    ]
    return matches[0] if len(matches) == 1 else None
