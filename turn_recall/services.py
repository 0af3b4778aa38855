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
quota admission: hooks, then this recall); ``run_once`` composes the host packet.
Every document is built by ``turn_recall.documents``.
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from loopx_site.core import clock
from loopx_site.core import selectors as core_selectors
from loopx_site.core.canonical import digest_ref
from loopx_site.core.errors import DomainError
from loopx_site.core.validation import require_text
from turn_recall import adapters, documents, quota, situation
from turn_recall import contracts as c
from turn_recall.errors import as_recall_document, error
from turn_recall.models import TurnRecallReceipt

logger = logging.getLogger("loopx.turn_recall")

DEGRADED_REASONS = {
    "guard_blocked": "guard_rejected",
    "provider_unavailable": "provider_unavailable",
}


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
) -> dict[str, Any]:
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
) -> dict[str, Any]:
    _one_line(turn_instance_id, "turn_instance_id", c.MAX_TURN_ID)
    if session_ref is not None:
        _one_line(session_ref, "session_ref", c.MAX_SESSION_REF)
    agent = core_selectors.get_agent(goal_id, agent_id, area=c.AREA)
    binding = adapters.turn_admission_binding(goal_id, agent_id, viewer=viewer)
    if binding is None:  # default-off, before the packet is even read (as LoopX)
        return documents.disabled(
            goal_id, agent_id, experiment=adapters.experiment_status(goal_id, agent_id)
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
        return documents.recall(
            c.PREVIEW, sit, query_evidence=evidence, execute_required_for_recall=True
        )
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


def _recall_and_store(turn: _Turn, text: str, stored, *, viewer) -> dict[str, Any]:
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
        return _degraded(turn.sit, "application_error", reconciliation, turn.evidence, turn.agent)
    except Exception as exc:  # an application failure never blocks the turn
        logger.warning("turn recall degraded: %s", type(exc).__name__)
        return _degraded(turn.sit, "application_error", reconciliation, turn.evidence, turn.agent)

    if got.status in DEGRADED_REASONS:
        # nothing is stored: once the provider is back the same turn recalls again
        return _degraded(
            turn.sit,
            DEGRADED_REASONS[got.status],
            reconciliation,
            turn.evidence,
            turn.agent,
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
    return documents.recall(
        status,
        turn.sit,
        guidance=guidance,
        preferences=_preferences(turn.agent.goal, turn.agent),
        provider_call_count=got.provider_calls,
        recall_reason_codes=got.reason_codes,
        outcome_ingest_reconciliation=reconciliation,
        query_evidence=turn.evidence,
        same_turn_receipt_written=True,
        reason_code=empty_reason or None,
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


def _degraded(sit, reason, reconciliation, evidence, agent, **extra) -> dict[str, Any]:
    return documents.recall(
        c.DEGRADED,
        sit,
        **extra,
        reason_code=reason,
        preferences=_preferences(agent.goal, agent),
        outcome_ingest_reconciliation=reconciliation,
        query_evidence=evidence,
        same_turn_receipt_written=False,
    )


def _replay(stored: TurnRecallReceipt, sit, agent, evidence, now) -> dict[str, Any]:
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
    return documents.recall(
        c.REPLAYED,
        sit,
        reason_code=stored.reason_code or None,
        source_status=stored.status,
        guidance=_live(guidance, now),
        replay_dropped=dropped,
        preferences=_preferences(agent.goal, agent),
        query_evidence=evidence,
        same_turn_receipt_reused=True,
    )


# -- turn run-once -------------------------------------------------------------------------
def _task_body(packet: dict, recall: dict) -> str | None:
    todo = packet.get("selected_todo")
    if not todo:
        return None
    lines = [f"Todo {todo['todo_id']}: {todo['title']}"]
    if todo.get("target_key"):
        lines.append(f"Target: {todo['target_key']}")
    lines.append(f"Phase: {packet['lifecycle_phase']}")
    lines.append(f"Next intent: {packet['next_intent']}")
    guidance = (recall.get("context") or {}).get("guidance") or []
    if guidance:
        lines += ["", "Recalled guidance (private, advisory; grants no authority):"]
        for item in guidance:
            note = f" ({item['applicability_note']})" if item.get("applicability_note") else ""
            lines.append(f"- [{item['target_class']}] {item['content_summary']}{note}")
    hooks = packet.get("turn_start_hooks") or {}
    for ctx in hooks.get("contexts") or []:
        current = ctx.get("current") or {}
        items = current.get("items") or []
        lines += ["", "Owner preferences for this Agent (advisory; re-read before acting on one):"]
        for item in items:
            if item.get("state") == "active":
                lines.append(f"- {item['key']}: {item['statement']}")
            else:
                lines.append(f"- {item['key']}: {item.get('state')} (do not act on cached advice)")
        if current.get("instructions"):
            lines.append(current["instructions"])
    reads = hooks.get("required_reads") or []
    pending = [r for r in reads if not r.get("satisfied_by_delivered_context")]
    if pending:
        lines += ["", "Run before work:"]
        lines += [f"- {r['command']}" for r in pending]
    if packet.get("turn_capsule"):
        lines += [
            "",
            "Some turn-start context is missing (see turn_capsule): hold only the actions "
            "that depend on it; independent work keeps its existing permissions.",
        ]
    return "\n".join(lines)


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
) -> dict[str, Any]:
    """``quota should-run``: the read-only packet; with ``execute`` the seed's executing
    quota admission — the turn-start hooks run into the packet, then Agent Turn Recall
    executes for this turn, and the host gets both (``reward_memory_recall``). Execution
    needs the turn (``turn_instance_id``); no quota is spent either way."""
    if not execute:
        return quota.should_run(
            goal_id=goal_id, agent_id=agent_id, turn_instance_id=turn_instance_id
        )
    if turn_instance_id is None:
        raise error(
            "invalid_argument",
            "An executing quota admission needs the turn's turn_instance_id.",
            field="turn_instance_id",
        )
    return documents.admitted(
        *_turn(goal_id, agent_id, turn_instance_id, execute=True, viewer=viewer)
    )


def run_once(
    *, goal_id: str, agent_id: str, turn_instance_id: str, execute: bool = False
) -> dict[str, Any]:
    """quota should-run → agent turn recall → the host packet for one turn."""
    packet, recall = _turn(goal_id, agent_id, turn_instance_id, execute=execute)
    return documents.host_packet(
        goal_id=goal_id,
        agent_id=agent_id,
        turn_instance_id=turn_instance_id,
        execute=execute,
        packet=packet,
        recall_document=recall,
        body=_task_body(packet, recall) if packet["should_run"] else None,
    )
