"""Agent Turn Recall: the one write path of the app, executing quota admission and
``run_once``.

``agent_turn_recall`` prepares bounded guidance for an autonomous turn from the exact
quota packet the host routed with (ours, or the one real ``loopx quota should-run``
prints):

1. validate the identities (``invalid_argument``; unknown Goal/Agent);
2. default-off: without an operator-registered corpus binding this Agent to
   ``agent_workflow.turn_admission`` → LoopX's ``disabled`` document, zero provider
   calls — decided before the packet is read, as LoopX;
3. check the packet before any provider call (``situation.check_packet``: ``mode``,
   heartbeat turn, Goal, Agent, project → ``invalid_packet`` / ``packet_mismatch``);
4. preview (default) → situation, fingerprint, recall id and the query's digest;
5. execute → an existing ``TurnRecallReceipt`` for (goal digest, agent digest,
   turn_recall_id) replays (zero provider calls; its guidance re-read through Reward
   Memory's readable-records selector, drops counted in ``replay_dropped``) unless
   ``force_refresh``; otherwise reconcile this exact Goal+Agent's pending ambiguous
   ingests, then one function-boundary recall through ``reward_memory``; expired
   guidance is dropped; the compact receipt is stored (replaced on ``force_refresh``).

Failures (provider down, guard rejection, application error) → ``degraded`` with an
empty base context: no user gate, no quota spend, no sink, and no receipt — the same
turn recalls again once the cause is gone.

``admit`` is ``quota should-run`` (read-only, or with ``execute`` the seed's executing
quota admission: hooks, then this recall); ``run_once`` runs both for the host packet.
Each returns a result (``TurnRecall``, ``Admission``, ``HostTurn``) that the edges hand to
``turn_recall.documents``; the stored receipt is a row of fields, rendered anew by every
replay, never a stored document.
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction

from loopx_site.core import clock
from loopx_site.core import selectors as core_selectors
from loopx_site.core.canonical import digest_ref
from loopx_site.core.errors import DomainError
from loopx_site.core.validation import require_text
from turn_recall import adapters, quota, situation
from turn_recall import contracts as c
from turn_recall.errors import as_recall_document, error
from turn_recall.models import TurnRecallReceipt

logger = logging.getLogger("loopx.turn_recall")

DEGRADED_REASONS = {
    "guard_blocked": "guard_rejected",
    "provider_unavailable": "provider_unavailable",
}


@dataclass(frozen=True)
class TurnRecall:
    """One Agent Turn Recall (``documents.turn_recall`` renders ``agent_turn_recall_v0``).

    ``situation`` is ``None`` only while ``disabled`` (the packet is not read; the
    Agent's ``experiment`` status is reported instead). The optional fields are set by
    the step that knows them: ``recall_reason_codes`` once the provider answered,
    ``reconciliation`` and ``receipt_written`` by a fresh execution, ``source_status``
    and ``replay_dropped`` by a replay of the stored receipt."""

    status: str
    goal_id: str
    agent_id: str
    situation: dict[str, Any] | None = None
    query_evidence: Any = None
    experiment: dict[str, Any] | None = None
    reason_code: str | None = None
    guidance: list[dict[str, Any]] = field(default_factory=list)
    preferences: dict[str, Any] | None = None
    provider_call_count: int = 0
    recall_reason_codes: list[str] | None = None
    reconciliation: dict[str, Any] | None = None
    receipt_written: bool | None = None
    source_status: str | None = None
    replay_dropped: Any = None


@dataclass(frozen=True)
class Admission:
    """``quota should-run``: the packet, and with ``execute`` the turn's recall
    (``documents.admission`` renders it)."""

    packet: dict[str, Any]
    recall: TurnRecall | None = None


@dataclass(frozen=True)
class HostTurn:
    """``turn run-once``: the turn's quota packet and its recall
    (``documents.host_packet`` renders ``loopx_turn_host_packet_v0``)."""

    goal_id: str
    agent_id: str
    turn_instance_id: str
    execute: bool
    packet: dict[str, Any]
    recall: TurnRecall


def scope_digests(goal_id: str, agent_id: str) -> tuple[str, str]:
    return digest_ref({"goal_id": goal_id}), digest_ref({"goal_id": goal_id, "agent_id": agent_id})


def _live(guidance: list[dict], now) -> list[dict]:
    """Drop guidance whose record expired at or before ``now``."""
    kept = []
    for item in guidance:
        expires = item.get("expires_at")
        if expires and clock.parse_iso_z(expires) <= now:
            continue
        kept.append(item)
    return kept


def _preferences(goal, agent) -> dict | None:
    """The participating preference hook's fresh view (never cached, never stored)."""
    seen = adapters.observe_preferences(goal, agent)
    if not seen.participating:
        return None
    if seen.error_code:
        return {"status": c.UNAVAILABLE, "error_code": seen.error_code}
    return seen.view


def agent_turn_recall(
    *,
    goal_id: str,
    agent_id: str,
    turn_instance_id: str,
    quota_decision: Any,
    execute: bool = False,
    session_ref: str | None = None,
    force_refresh: bool = False,
    viewer: tuple[str, str | None] | None = None,
) -> TurnRecall:
    """Run (or preview) the turn recall; errors carry ``agent_turn_recall_v0`` fields.

    ``quota_decision`` is the packet, or a callable that reads it: as in LoopX, the
    packet is read only once the surface is enabled (a bad or missing packet while
    ``disabled`` is still ``disabled``, exit 0). ``session_ref`` joins the situation
    (LoopX's ``--session-ref``); ``force_refresh`` ignores a stored same-turn receipt
    and recalls again (LoopX's ``--force-refresh``; the receipt is replaced).

    ``viewer`` is the caller's own read scope (``loopx_site.core.access.Caller.viewer``;
    ``None``: an operator or the shell): a corpus it may not read is treated exactly as
    an unregistered one (a Goal-wide token never reaches an Agent's private corpus)."""
    try:
        return _turn_recall(
            goal_id,
            agent_id,
            turn_instance_id,
            quota_decision,
            execute,
            session_ref=session_ref,
            force_refresh=force_refresh,
            viewer=viewer,
        )
    except DomainError as exc:
        raise as_recall_document(exc, goal_id=goal_id, agent_id=agent_id) from exc


def _one_line(value: Any, field: str, limit: int) -> None:
    """An opaque host id: non-empty text of one line without surrounding spaces."""
    require_text(value, field, max_length=limit, area=c.AREA)
    if situation.compact(value, limit) != value:
        raise error(
            "invalid_argument", f"{field} must be one line without surrounding spaces", field=field
        )


def _read_packet(quota_decision: Any | Callable[[], Any]) -> Any:
    return quota_decision() if callable(quota_decision) else quota_decision


def _turn_recall(
    goal_id,
    agent_id,
    turn_instance_id,
    quota_decision,
    execute,
    *,
    session_ref=None,
    force_refresh=False,
    viewer=None,
) -> TurnRecall:
    _one_line(turn_instance_id, "turn_instance_id", c.MAX_TURN_ID)
    if session_ref is not None:
        _one_line(session_ref, "session_ref", c.MAX_SESSION_REF)
    agent = core_selectors.get_agent(goal_id, agent_id, area=c.AREA)
    binding = adapters.turn_admission_binding(goal_id, agent_id, viewer=viewer)
    if binding is None:  # default-off, before the packet is even read (as LoopX)
        return TurnRecall(
            c.DISABLED, goal_id, agent_id, experiment=adapters.experiment_status(goal_id, agent_id)
        )
    packet = _read_packet(quota_decision)
    situation.check_packet(packet, goal_id, agent_id, turn_instance_id, binding["project"])
    sit = situation.build(
        packet,
        goal_id=goal_id,
        agent_id=agent_id,
        turn_instance_id=turn_instance_id,
        project=binding["project"],
        session_ref=session_ref,
    )
    text = situation.query(sit)
    evidence = situation.query_evidence(sit, text)
    if not execute:
        return TurnRecall(c.PREVIEW, goal_id, agent_id, sit, evidence)
    now = clock.now()
    stored = _stored_receipt(goal_id, agent_id, sit["turn_recall_id"])
    if stored is not None and not force_refresh:
        return _replay(stored, sit, agent, evidence, now)
    turn = _Turn(goal_id, agent_id, agent, binding, sit, evidence, now, turn_instance_id)
    return _recall_and_store(turn, text, stored, viewer=viewer)


@dataclass(frozen=True)
class _Turn:
    """One executing turn recall's settled inputs (what every later step reads)."""

    goal_id: str
    agent_id: str
    agent: Any
    binding: dict[str, Any]
    sit: dict[str, Any]
    evidence: Any
    now: Any
    turn_instance_id: str


def _stored_receipt(goal_id: str, agent_id: str, turn_recall_id: str):
    """This turn's stored receipt, if an earlier execution wrote one."""
    goal_digest, agent_digest = scope_digests(goal_id, agent_id)
    return TurnRecallReceipt.objects.filter(
        goal_digest=goal_digest, agent_digest=agent_digest, turn_recall_id=turn_recall_id
    ).first()


def _recall_and_store(turn: _Turn, text: str, stored, *, viewer) -> TurnRecall:
    """Reconcile pending ingests, recall through the provider, and store the turn's
    receipt; a provider that is down or failing degrades the turn (nothing stored)."""
    reconciliation = adapters.reconcile_ingests(turn.goal_id, turn.agent_id)
    try:
        got = adapters.recall(
            goal_id=turn.goal_id,
            agent_id=turn.agent_id,
            corpus_id=turn.binding["corpus_id"],
            query=text,
            request_id=turn.sit["turn_recall_id"],
            viewer=viewer,
        )
    except DomainError as exc:
        if exc.code in ("goal_not_registered", "agent_not_registered"):
            raise
        return _degraded(turn, "application_error", reconciliation)
    except Exception as exc:  # an application failure never blocks the turn
        logger.warning("turn recall degraded: %s", type(exc).__name__)
        return _degraded(turn, "application_error", reconciliation)

    if got.status in DEGRADED_REASONS:
        # nothing is stored: once the provider is back the same turn recalls again
        return _degraded(
            turn,
            DEGRADED_REASONS[got.status],
            reconciliation,
            provider_call_count=got.provider_calls,
            recall_reason_codes=got.reason_codes,
        )
    guidance = _live(got.guidance, turn.now)[: c.MAX_GUIDANCE]
    status = c.APPLIED if guidance else c.EMPTY
    # an empty turn says why when the memory had nothing relevant (no filler guidance)
    empty_reason = c.NOTHING_RELEVANT if status == c.EMPTY and got.nothing_relevant else ""
    replayed = _store(
        turn, stored, status, guidance, got.provider_calls, reconciliation, empty_reason
    )
    if replayed is not None:
        return replayed
    return TurnRecall(
        status,
        turn.goal_id,
        turn.agent_id,
        turn.sit,
        turn.evidence,
        reason_code=empty_reason or None,
        guidance=guidance,
        preferences=_preferences(turn.agent.goal, turn.agent),
        provider_call_count=got.provider_calls,
        recall_reason_codes=got.reason_codes,
        reconciliation=reconciliation,
        receipt_written=True,
    )


def _store(turn: _Turn, stored, status, guidance, provider_calls, reconciliation, reason_code):
    """Write the turn's receipt (``--force-refresh`` replaces ``stored``). ``None`` once
    written; the stored receipt's replay when a racing execution of the same turn
    stored it first."""
    goal_digest, agent_digest = scope_digests(turn.goal_id, turn.agent_id)
    fields = {
        "goal_digest": goal_digest,
        "agent_digest": agent_digest,
        "turn_recall_id": turn.sit["turn_recall_id"],
        "goal_id": turn.goal_id,
        "agent_id": turn.agent_id,
        "situation_fingerprint": turn.sit["situation_fingerprint"],
        "turn_instance_digest": digest_ref(turn.turn_instance_id),
        "status": status,
        "reason_code": reason_code,
        "corpus_id": turn.binding["corpus_id"],
        "guidance": guidance,
        "guidance_count": len(guidance),
        "provider_call_count": provider_calls,
        "reconciliation": reconciliation,
        "observed_at": turn.now,
        "created_at": turn.now,
    }
    try:
        with transaction.atomic():
            if stored is not None:  # --force-refresh: this recall replaces the receipt
                TurnRecallReceipt.objects.filter(pk=stored.pk).update(**fields)
            else:
                TurnRecallReceipt(**fields).save(force_insert=True)
    except IntegrityError:  # a racing execution of the same turn stored it first
        raced = _stored_receipt(turn.goal_id, turn.agent_id, turn.sit["turn_recall_id"])
        if raced is None:  # not the race: a broken table; the adapter reports it
            raise
        return _replay(raced, turn.sit, turn.agent, turn.evidence, turn.now)
    return None


def _degraded(turn: _Turn, reason, reconciliation, **provider) -> TurnRecall:
    """The turn degraded for ``reason``: no guidance, nothing stored (``provider``: what
    the provider answered, when it was reached)."""
    return TurnRecall(
        c.DEGRADED,
        turn.goal_id,
        turn.agent_id,
        turn.sit,
        turn.evidence,
        reason_code=reason,
        preferences=_preferences(turn.agent.goal, turn.agent),
        reconciliation=reconciliation,
        receipt_written=False,
        **provider,
    )


def _replay(stored: TurnRecallReceipt, sit, agent, evidence, now) -> TurnRecall:
    """The stored turn (same ids, zero provider calls, no write) re-read now: its
    guidance passes Reward Memory's readable-records selector again, so a record retired,
    revoked, superseded, expired, refuted or quarantined since is dropped and counted in
    ``replay_dropped``."""
    guidance, dropped = adapters.replay_guidance(
        goal_id=stored.goal_id,
        agent_id=stored.agent_id,
        corpus_id=stored.corpus_id,
        guidance=list(stored.guidance or []),
        now=now,
    )
    return TurnRecall(
        c.REPLAYED,
        sit["goal_id"],
        sit["agent_id"],
        sit,
        evidence,
        reason_code=stored.reason_code or None,
        guidance=_live(guidance, now),
        preferences=_preferences(agent.goal, agent),
        source_status=stored.status,
        replay_dropped=dropped,
    )


# -- turn run-once -------------------------------------------------------------------------
def scope(acting) -> dict[str, Any]:
    """The keyword arguments of a turn call made for an acting ``access.Caller`` (the one
    resolver's ``acting_for``): its Goal, Agent and own read scope."""
    return {"goal_id": acting.goal_id, "agent_id": acting.agent_id, "viewer": acting.viewer}


def _turn(goal_id, agent_id, turn_instance_id, *, execute, viewer=None):
    """quota should-run for this turn → agent turn recall of that exact packet."""
    ids = {"goal_id": goal_id, "agent_id": agent_id, "turn_instance_id": turn_instance_id}
    packet = quota.should_run(**ids)
    return packet, agent_turn_recall(**ids, quota_decision=packet, execute=execute, viewer=viewer)


def admit(
    *,
    goal_id: str,
    agent_id: str,
    turn_instance_id: str | None = None,
    execute: bool = False,
    viewer: tuple[str, str | None] | None = None,
) -> Admission:
    """``quota should-run``: the read-only packet; with ``execute`` the seed's executing
    quota admission — the turn-start hooks run into the packet, then Agent Turn Recall
    executes for this turn, and the host gets both (``reward_memory_recall``). Execution
    needs the turn (``turn_instance_id``); no quota is spent either way."""
    if not execute:
        return Admission(
            quota.should_run(goal_id=goal_id, agent_id=agent_id, turn_instance_id=turn_instance_id)
        )
    if turn_instance_id is None:
        raise error(
            "invalid_argument",
            "An executing quota admission needs the turn's turn_instance_id.",
            field="turn_instance_id",
        )
    return Admission(*_turn(goal_id, agent_id, turn_instance_id, execute=True, viewer=viewer))


def run_once(
    *, goal_id: str, agent_id: str, turn_instance_id: str, execute: bool = False
) -> HostTurn:
    """quota should-run → agent turn recall: what the host packet of one turn carries."""
    packet, recall = _turn(goal_id, agent_id, turn_instance_id, execute=execute)
    return HostTurn(goal_id, agent_id, turn_instance_id, execute, packet, recall)
