"""The minimal ingest loop (``reward_memory ingest-event``).

In order: adapter mapping and guards (before any provider call) → deterministic
``candidate_ref`` dedupe → standing-policy accept → active envelope → provider sync →
function-boundary recall → triple readback → ``reward_memory_ingest_receipt_v0``.

Planned by default (no writes, no provider call). ``execute`` needs the (Goal, Agent)'s
enabled experiment route (``routes.experiment_route``): the event's surface is in the
Agent's verified config and the corpus is that surface's ``ingest_corpus_id``. One
``IngestEvent`` row per (Agent, event): its
``observed_at`` is fixed at first execution and reused by every retry, so a retry writes
the same bytes to the same provider target. Fail-open statuses (provider unavailable,
commit pending, readback mismatch) leave a sidecar ``PendingIngest`` row that
``reconcile_pending_ingests`` retries at the next turn start.

``event_id`` is the idempotency key per (Agent, corpus) — a unique constraint on
``IngestEvent.event_key`` plus a content-digest (``event_ref``) compare under the row
lock: the same id and content replays, the same id with other content is
``operation_conflict`` (preview and execute) and writes nothing.

The service returns an ``IngestOutcome``; the edges render it (``documents.ingest.ingest``).
An executed event's receipt is rendered once, when it is stored on the event row
(``documents.ingest.receipt`` of its ``Judgement``), and answered as stored. A replay of
an activated event is that stored receipt (the row is never patched) with the present
beside it (``Present``: ``record_state`` and ``memory_available_for_recall`` from the
record's present lifecycle, the guards as they evaluate now). A preview, or an event
blocked before it had a row, is its ``Judgement``: what the service judged, unrendered.
"""

from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F, Q

from loopx_site.core import clock, progress
from loopx_site.core.canonical import prefixed_id
from loopx_site.core.selectors import get_agent
from reward_memory import contracts as c
from reward_memory import principals, selectors
from reward_memory.documents import ingest as ingest_documents
from reward_memory.domain import candidates, guards, loopx, uris
from reward_memory.domain import validation as v
from reward_memory.domain.guards import Reason
from reward_memory.errors import AREA, RewardMemoryError, invalid
from reward_memory.models import Corpus, IngestEvent, MemoryRecord, PendingIngest, StandingPolicy
from reward_memory.peers import binding_peer
from reward_memory.principals import Principal, require_operator
from reward_memory.services import activation, duplicates, lineage, roles, routes


def submit_event(
    *,
    document: Any,
    goal_id: str | None = None,
    agent_id: str | None = None,
    execute: bool = False,
    **caller: Any,
) -> "IngestOutcome":
    """What a host or an operator submits (CLI and API alike): a compact event, LoopX's
    wrapper (``adapter``, ``event``, ``observed_at``) or LoopX's packet, unwrapped and
    routed once (its ``observed_at`` in any of LoopX's timezone forms, kept as the same
    instant in UTC ``…Z``; ``loopx.unwrap``: routed when a Goal or Agent is named, the surface's
    corpus from the (Goal, Agent)'s allowlisted corpora), then ``ingest_event`` with the
    ``caller``'s ``viewer`` and ``principal``."""
    _require_route_names(goal_id, agent_id, execute)
    if _is_wrapper(document) and document.get("observed_at") is not None:
        document = {**document, "observed_at": v.observed_at(document["observed_at"])}
    event = loopx.unwrap(
        document,
        routed=bool(goal_id or agent_id),
        route_corpus_id=lambda surface: routes.route_corpus_id(goal_id, agent_id, surface),
    )
    return ingest_event(event=event, goal_id=goal_id, agent_id=agent_id, execute=execute, **caller)


def _is_wrapper(document: Any) -> bool:
    """LoopX's wrapper (or packet) around a compact event, not the event itself."""
    return isinstance(document, dict) and "event" in document and "schema_version" not in document


def _require_route_names(goal_id: str | None, agent_id: str | None, execute: bool) -> None:
    """The one check of the route's names: ``execute`` needs both; a preview names both
    or neither."""
    if execute and (not goal_id or not agent_id):
        raise invalid(
            "goal_id",
            "`execute` requires an enabled experiment route via `goal_id` and `agent_id`",
        )
    if (goal_id or agent_id) and not (goal_id and agent_id):
        raise invalid("agent_id", "`goal_id` and `agent_id` must be supplied together")


def ingest_event(
    *,
    event: Any,
    goal_id: str | None = None,
    agent_id: str | None = None,
    execute: bool = False,
    viewer: tuple[str, str | None] | None = None,
    principal: Principal | None = None,
) -> "IngestOutcome":
    """Run the ingest pipeline for one compact event; returns its ``IngestOutcome``.

    ``viewer`` is the caller's verified (Goal, Agent) scope (``None``: an operator); a
    corpus it may not read does not exist for it. A hard_policy event activates only
    with a live operator checkpoint (the event's own ``verified``/actor/role claims are
    ignored); an advisory event's ``source.actor``/``actor_role`` count only when a
    server record binds them (``roles.source_role_bindings`` for the authenticated
    ``principal``; ``actor_role_unverified`` otherwise); a closed lineage never
    reactivates; the corpus URI's peer must be the configured peer of the (Goal, Agent)
    before any provider call.
    """
    agent = None
    _require_route_names(goal_id, agent_id, execute)
    if goal_id:
        agent = get_agent(goal_id, agent_id, area=AREA)
    if not isinstance(event, dict):
        raise invalid(None, "the event must be a JSON object")
    v.schema(event, tuple(candidates.ADAPTERS))  # what the event is, before where it goes
    corpus_id = v.identifier(event.get("corpus_id"), "corpus_id")
    corpus = selectors.get_corpus(corpus_id, viewer=viewer)
    now = clock.now()
    bindings = roles.source_role_bindings(corpus, principal, now=now)
    adapted = candidates.adapt_and_evaluate(
        event,
        now=now,
        corpus=selectors.corpus_binding(corpus),
        checkpoints=selectors.checkpoint_lookup(now),
        roles=bindings,
    )
    evaluation = adapted.evaluation
    if execute:
        surface_id = ((evaluation.candidate or {}).get("scope") or {}).get("surface")
        require_ingest_route(goal_id, agent_id, surface_id or _event_surface(event), corpus)
    if agent is not None:
        require_same_event_content(agent, corpus, adapted)
    reasons, policy, peer = _corpus_reasons(evaluation, corpus, goal_id, agent_id, agent)
    context = IngestEvaluation.of(
        adapted, corpus, policy, goal_id, agent_id, peer, bindings, principal
    )
    if reasons:
        return _blocked(context, reasons, execute=execute)
    if not execute:
        existing = (
            selectors.ingest_event_row(goal_id, agent_id, adapted.event_ref) if agent else None
        )
        return IngestOutcome(
            judgement=Judgement(
                context,
                c.INGEST_PLANNED,
                executed=False,
                observed_at=existing.observed_at if existing else None,
                duplicate=_duplicate(context),
            )
        )
    return _execute(context, agent)


def _corpus_reasons(evaluation, corpus, goal_id, agent_id, agent):
    """What the corpus adds to the candidate's own guards: the configured actor peer must
    be the corpus URI's, a closed lineage never reactivates, and the surface needs an
    active standing policy that accepts the candidate: ``(reasons, policy, peer)``."""
    reasons = list(evaluation.reasons)
    policy = None
    peer = binding_peer(corpus, goal_id, agent_id)
    if agent is not None and not uris.peer_matches(corpus.provider_scope_ref, peer):
        reasons.append(Reason("actor_peer_mismatch", "agent_id"))
    if evaluation.candidate is not None:
        if selectors.open_closure(corpus, evaluation.candidate, evaluation.candidate_ref):
            reasons.append(Reason("lineage_closed", "candidate_ref"))
        policy = selectors.active_policy(corpus, evaluation.candidate["scope"]["surface"])
        if policy is None:
            reasons.append(Reason("standing_policy_missing", "scope.surface"))
        else:
            reasons += guards.standing_policy_reasons(evaluation.candidate, policy.document)
    return guards.normalise(reasons), policy, peer


def _blocked(context: "IngestEvaluation", reasons: list[Reason], *, execute: bool):
    """A blocked event: its receipt; executed again after it activated, the stored
    receipt with the present beside it; a retried event that no longer passes is
    recorded blocked (its sidecar resolved)."""
    goal_id, agent_id = context.goal_id, context.agent_id
    row = (
        selectors.ingest_event_row(goal_id, agent_id, context.adapted.event_ref)
        if execute
        else None
    )
    if row is not None and row.status == c.INGEST_ACTIVATED and row.receipt:
        return _replayed(row, reasons)
    if row is not None:
        judgement = Judgement(
            context,
            c.GUARD_BLOCKED,
            executed=True,
            reasons=tuple(reasons),
            observed_at=row.observed_at,
        )
        return _finalize(row, judgement)
    return IngestOutcome(
        judgement=Judgement(context, c.GUARD_BLOCKED, executed=execute, reasons=tuple(reasons))
    )


def require_same_event_content(agent, corpus, adapted) -> None:
    """``event_id`` is the idempotency key of an event per (Agent, corpus): a stored
    event with the same id and other content is ``operation_conflict`` (nothing is
    written). The same id and content is the same event (a replay)."""
    key = candidates.event_key(adapted.event)
    if not key:
        return
    stored = (
        IngestEvent.objects.filter(agent=agent, corpus=corpus, event_key=key)
        .values_list("event_ref", flat=True)
        .first()
    )
    if stored is not None and stored != adapted.event_ref:
        raise _event_conflict()


def _event_conflict() -> RewardMemoryError:
    return RewardMemoryError(
        "operation_conflict",
        "This event_id was already ingested with different content; send the original "
        "event to replay it, or a new event_id for new content.",
        field="event_id",
    )


def require_ingest_route(goal_id: str, agent_id: str, surface_id: Any, corpus) -> None:
    """``--execute`` needs the (Goal, Agent)'s enabled experiment route: available, the
    surface declared in the Agent's config, and this corpus its ``ingest_corpus_id``."""
    route = routes.experiment_route(goal_id, agent_id)
    surface = route.surface(surface_id)
    if surface is None or surface.ingest_corpus_id != corpus.corpus_id:
        raise RewardMemoryError(
            "experiment_route_unavailable",
            "`execute` requires an enabled experiment route: this Goal/Agent has no "
            "verified Reward Memory experiment whose config ingests this surface into "
            "this corpus.",
            field="agent_id",
            details={"experiment_status": route.status},
        )


def _event_surface(event: dict) -> Any:
    return (
        event.get("surface_id") or event.get("surface") or (event.get("scope") or {}).get("surface")
    )


@dataclass(frozen=True)
class IngestEvaluation:
    """One event as the ingest judged it before any write — the adapted event, its
    corpus, the standing policy that accepts it (``None``: none), the (Goal, Agent) route,
    the configured actor peer and the server-resolved source binding. The service's
    result that ``documents.ingest.receipt`` renders with a status and an outcome."""

    adapted: Any  # ``candidates.AdaptedEvent``
    corpus: Corpus
    policy: StandingPolicy | None
    goal_id: str | None
    agent_id: str | None
    peer: str | None = None
    source_binding: Any = None  # ``guards.SourceBinding`` of the candidate, or None
    principal: Principal | None = None

    @classmethod
    def of(cls, adapted, corpus, policy, goal_id, agent_id, peer=None, roles=(), principal=None):
        candidate = adapted.evaluation.candidate
        binding = guards.source_binding(candidate, roles) if candidate else None
        return cls(adapted, corpus, policy, goal_id, agent_id, peer, binding, principal)

    @property
    def candidate(self):
        return self.adapted.evaluation.candidate

    @property
    def policy_digest(self) -> str | None:
        return self.policy.policy_digest if self.policy else None

    def record_ref(self, status: str) -> str | None:
        """The record the event activates (or would): ``None`` without a candidate and a
        standing policy, or when the guards blocked it."""
        candidate, policy_digest = self.adapted.evaluation.candidate, self.policy_digest
        if not (candidate and policy_digest and status != c.GUARD_BLOCKED):
            return None
        return activation.record_ref_for(
            self.corpus.corpus_id, self.adapted.evaluation.candidate_ref, policy_digest
        )

    def source_verification(self) -> dict[str, Any] | None:
        return self.source_binding.payload() if self.source_binding is not None else None


def activation_plan(evaluation: IngestEvaluation, observed_at) -> activation.ActivationPlan:
    """The standing-policy activation of an evaluated event, first observed at
    ``observed_at`` (fixed at first execution, reused by every retry)."""
    judged = evaluation.adapted.evaluation
    return activation.build_plan(
        activation.ActivationPlan(
            corpus=evaluation.corpus,
            candidate=judged.candidate,
            candidate_ref=judged.candidate_ref,
            basis="standing_policy",
            basis_ref=evaluation.policy.policy_digest,
            observed_at=observed_at,
            expires_at=judged.expires_at,
            actor_peer_id=evaluation.peer,
            source_binding=evaluation.source_binding,
        )
    )


@dataclass(frozen=True)
class Judgement:
    """One event's receipt before it is rendered: the ``IngestEvaluation`` with its
    status, the guards' reasons and, once executed, when it was first observed and the
    activation's plan and outcome (``duplicate``: the live record it restates).
    ``documents.ingest.receipt`` renders it."""

    evaluation: IngestEvaluation
    status: str
    executed: bool
    reasons: tuple[Reason, ...] = ()
    observed_at: Any = None
    outcome: activation.ActivationOutcome | None = None
    plan: activation.ActivationPlan | None = None
    duplicate: duplicates.Match | None = None

    @property
    def record_ref(self) -> str | None:
        """The record the event activates (or would); the record it restates when it is
        a duplicate."""
        record_ref = self.evaluation.record_ref(self.status)
        if self.duplicate is not None and record_ref is not None:
            return self.duplicate.record.record_ref
        return record_ref

    @property
    def content_digest(self) -> str | None:
        return self.plan.content_digest if self.plan else None

    @property
    def receipt_id(self) -> str:
        """A digest of the receipt's stable fields: the same event and outcome has the
        same id."""
        evaluation = self.evaluation
        return prefixed_id(
            "rmir_",
            {
                "status": self.status,
                "event_ref": evaluation.adapted.event_ref,
                "goal_id": evaluation.goal_id,
                "agent_id": evaluation.agent_id,
                "candidate_ref": evaluation.adapted.evaluation.candidate_ref,
                "record_ref": self.record_ref,
                "policy_digest": evaluation.policy_digest,
                "content_digest": self.content_digest,
            },
        )


@dataclass(frozen=True)
class Present:
    """An activated event submitted again, as it stands now: its record's lifecycle
    (``record_state``, ``available`` to recall) and the guards' reasons now."""

    record_state: str
    available: bool
    reasons: tuple[Reason, ...] = ()


@dataclass(frozen=True)
class IngestOutcome:
    """What ``ingest_event`` answers (``documents.ingest.ingest`` renders it): the
    receipt ``stored`` on the event row (written now, or replayed with the ``present``
    beside it), or, when nothing was stored (a preview, an event blocked before it had a
    row), its ``judgement``. The attributes read either, for callers that only need
    the status."""

    judgement: Judgement | None = None
    stored: dict[str, Any] | None = None
    present: Present | None = None

    def _get(self, key: str) -> Any:
        return (self.stored or {}).get(key)

    @property
    def replayed(self) -> bool:
        return self.present is not None

    @property
    def status(self) -> str:
        return self.judgement.status if self.judgement else self._get("status")

    @property
    def receipt_id(self) -> str | None:
        return self.judgement.receipt_id if self.judgement else self._get("receipt_id")

    @property
    def event_ref(self) -> str | None:
        if self.judgement:
            return self.judgement.evaluation.adapted.event_ref
        return self._get("event_ref")

    @property
    def record_ref(self) -> str | None:
        return self.judgement.record_ref if self.judgement else self._get("record_ref")

    @property
    def memory_available_for_recall(self) -> bool:
        if self.judgement:
            return self.judgement.status == c.INGEST_ACTIVATED
        if self.present is not None:
            return self.present.available
        return bool(self._get("memory_available_for_recall"))

    @property
    def readback(self) -> Any:
        if self.judgement:
            return self.judgement.outcome.readback if self.judgement.outcome else None
        return self._get("readback")

    @property
    def provider_call_count(self) -> int:
        if self.judgement:
            return self.judgement.outcome.provider_calls if self.judgement.outcome else 0
        return self._get("provider_call_count") or 0

    @property
    def reason_codes(self) -> list[str]:
        """The guards' reason codes: as judged, as they evaluate now for a replay, or as
        stored."""
        if self.judgement or self.present:
            reasons = (self.judgement or self.present).reasons
            return [reason.code for reason in guards.normalise(reasons)]
        return [reason["code"] for reason in (self._get("guard") or {}).get("reasons") or []]

    @property
    def duplicate_of(self) -> str | None:
        """The record ref this event restates, or ``None``."""
        if self.judgement:
            duplicate = self.judgement.duplicate
            return duplicate.record.record_ref if duplicate is not None else None
        return (self._get("duplicate_of") or {}).get("record_ref")


def _duplicate(evaluation: IngestEvaluation) -> duplicates.Match | None:
    """The live record of the corpus (same project and surface) this event's candidate
    restates (``services.duplicates``), or ``None``."""
    judged = evaluation.adapted.evaluation
    return duplicates.find_duplicate(
        corpus=evaluation.corpus, candidate=judged.candidate, candidate_ref=judged.candidate_ref
    )


def _claim(context: IngestEvaluation, agent) -> IngestEvent:
    """Get or create the event row; ``observed_at`` is set once, here.

    The event's ``event_id`` key is unique per (Agent, corpus) in the database: the
    stored row is locked and its content digest (``event_ref``) compared; a concurrent
    writer of the same id with other content loses on the constraint. Either way a
    different content is ``operation_conflict`` and nothing is written."""
    now = clock.now()
    candidate_ref = context.adapted.evaluation.candidate_ref
    key = candidates.event_key(context.adapted.event)
    try:
        with transaction.atomic():
            if key:
                held = (
                    IngestEvent.objects.select_for_update()
                    .filter(agent=agent, corpus=context.corpus, event_key=key)
                    .first()
                )
                if held is not None and held.event_ref != context.adapted.event_ref:
                    raise _event_conflict()
            row, _ = IngestEvent.objects.get_or_create(
                agent=agent,
                event_ref=context.adapted.event_ref,
                defaults={
                    "goal": agent.goal,
                    "corpus": context.corpus,
                    "event_key": key,
                    "adapter": context.adapted.adapter.adapter_id,
                    "candidate_ref": candidate_ref,
                    "status": c.INGEST_PLANNED,
                    "observed_at": now,
                    "event": context.adapted.event,
                    "submitted_by": context.principal.actor_ref if context.principal else "",
                    "submitted_token_id": context.principal.token_id
                    if context.principal and not context.principal.is_operator
                    else None,
                    "created_at": now,
                    "updated_at": now,
                },
            )
    except IntegrityError:  # a concurrent event created the row (or took the id) first
        row = IngestEvent.objects.filter(agent=agent, event_ref=context.adapted.event_ref).first()
        if row is None:  # the id went to other content
            raise _event_conflict() from None
    IngestEvent.objects.filter(pk=row.pk).update(attempts=F("attempts") + 1)
    return row


def _replayed(row: IngestEvent, reasons: list[Reason] | None = None) -> IngestOutcome:
    """An activated event again: its stored receipt as it was written (same
    ``receipt_id``, zero provider calls, no write; the row is never patched), answered
    with the present beside it — the record's lifecycle now (``record_state``,
    ``memory_available_for_recall`` from the readable-records selector) and the guards
    as they evaluate now."""
    record = row.record
    if record is None and row.receipt.get("record_ref"):
        record = MemoryRecord.objects.filter(record_ref=row.receipt["record_ref"]).first()
    state, available = selectors.record_present_state(
        record, goal_id=row.receipt.get("goal_id"), agent_id=row.receipt.get("agent_id")
    )
    return IngestOutcome(
        stored=row.receipt, present=Present(state, available, tuple(reasons or ()))
    )


def _execute(context: IngestEvaluation, agent) -> IngestOutcome:
    row = _claim(context, agent)
    if row.status == c.INGEST_ACTIVATED and row.receipt:
        # idempotent replay: the stored receipt (same receipt_id), zero provider calls,
        # flagged as the deduplicated answer it is, re-read against the present
        return _replayed(row)
    plan = activation_plan(context, row.observed_at)
    merged = _merge_duplicate(context, row, plan)
    if merged is not None:
        return merged
    outcome = activation.sync_and_verify(plan)
    if outcome.status in ("record_closed", c.GUARD_BLOCKED):
        code = outcome.guard_reason or "record_closed"
        judgement = Judgement(
            context,
            c.GUARD_BLOCKED,
            executed=True,
            reasons=(Reason(code, "candidate_ref"),),
            observed_at=row.observed_at,
        )
    else:
        judgement = Judgement(
            context,
            outcome.status,
            executed=True,
            observed_at=row.observed_at,
            outcome=outcome,
            plan=plan,
        )
    return _finalize(row, judgement)


def _merge_duplicate(context: IngestEvaluation, row: IngestEvent, plan) -> IngestOutcome | None:
    """A standing-policy candidate that says what a live record of the corpus already
    says is no second active record: the event is marked ``duplicate_of`` that record and
    its evidence joins the record's lineage (``services.lineage.add_evidence``), with no
    provider write. ``None`` when it restates nothing (a distinct candidate activates as
    usual) or the pre-write checks would block it (the ordinary path reports that)."""
    match = _duplicate(context)
    now = clock.now()
    if match is None or activation.backstop(plan, now) is not None:
        return None
    evaluation = context.adapted.evaluation
    with transaction.atomic():  # the evidence and the event's mark are one write
        lineage.add_evidence(
            record=match.record,
            candidate=evaluation.candidate,
            candidate_ref=evaluation.candidate_ref,
            event=row,
            similarity=match.similarity,
            actor=context.corpus.owner,
            now=now,
        )
        IngestEvent.objects.filter(pk=row.pk).update(
            duplicate_of=match.record.record_ref, duplicate_similarity=match.similarity
        )
    outcome = activation.ActivationOutcome(
        c.INGEST_ACTIVATED, match.record, activation.verified(), deduplicated=True
    )
    judgement = Judgement(
        context,
        c.INGEST_ACTIVATED,
        executed=True,
        observed_at=row.observed_at,
        outcome=outcome,
        plan=plan,
        duplicate=match,
    )
    return _finalize(row, judgement)


def _finalize(row: IngestEvent, judgement: Judgement) -> IngestOutcome:
    """Store the receipt, rendered once here (never downgrading an activated event), and
    the sidecar state; answer the receipt as stored."""
    now = clock.now()
    receipt, outcome = ingest_documents.receipt(judgement), judgement.outcome
    status = judgement.status
    with transaction.atomic():
        IngestEvent.objects.filter(pk=row.pk).filter(~Q(status=c.INGEST_ACTIVATED)).update(
            status=status,
            receipt=receipt,
            record=outcome.record if outcome and outcome.record else None,
            updated_at=now,
        )
        if status in c.INGEST_RETRYABLE:
            sidecar, created = PendingIngest.objects.select_for_update().get_or_create(
                event=row,
                defaults={
                    "goal_id": row.goal_id,
                    "agent_id": row.agent_id,
                    "reason": status,
                    "created_at": now,
                    "last_attempt_at": now,
                },
            )
            if not created:
                PendingIngest.objects.filter(pk=sidecar.pk).update(
                    reason=status,
                    attempts=F("attempts") + 1,
                    last_attempt_at=now,
                    resolved_at=None,
                )
        else:
            PendingIngest.objects.filter(event=row, resolved_at__isnull=True).update(
                resolved_at=now, last_attempt_at=now, reason=status
            )
    final = IngestEvent.objects.get(pk=row.pk)
    return IngestOutcome(stored=final.receipt)


def _submitter(row: IngestEvent) -> Principal | None:
    """The principal that first executed ``row``, for its retry: its host token (role
    bindings re-read from the present, so a revoked token or binding no longer binds),
    or its operator account; ``None`` when none was recorded."""
    if row.submitted_token_id is not None:
        token = row.submitted_token
        return Principal(principals.HOST, token.prefix, token_id=token.pk)
    if row.submitted_by.startswith("user:"):
        try:  # still an active operator account?
            return principals.operator_account(row.submitted_by, field="actor")
        except RewardMemoryError:
            return None
    return None


def retry_pending_ingests(*, goal_id: str, agent_id: str, operator) -> "Reconciliation":
    """An operator's retry of one Agent's pending ingests (the admin action): the
    operator account must hold ``reward_memory.change_pendingingest``."""
    require_operator(operator, "retry_pending_ingest")
    return reconcile_pending_ingests(goal_id=goal_id, agent_id=agent_id)


@dataclass(frozen=True)
class Reconciled:
    """One sidecar event retried: its receipt's status and id, or the ``error`` code that
    refused it."""

    event_ref: str
    status: str | None = None
    receipt_id: str | None = None
    error: str | None = None


@dataclass
class Reconciliation:
    """One Agent's sidecar retry (``documents.ingest.reconciliation`` renders it): the
    counts, each event retried, and ``skipped`` with the experiment status when automatic
    ingest is off (nothing was retried)."""

    goal_id: str
    agent_id: str
    attempted: int = 0
    activated: int = 0
    still_pending: int = 0
    blocked: int = 0
    events: list[Reconciled] = field(default_factory=list)
    skipped: str | None = None
    experiment_status: str | None = None


def reconcile_pending_ingests(*, goal_id: str, agent_id: str) -> Reconciliation:
    """Retry this exact Goal+Agent's unresolved sidecar ingests with the same
    deterministic event and ``observed_at`` (exact readback again). Fail-open: provider
    conditions leave the rows pending; guard changes resolve them as blocked."""
    get_agent(goal_id, agent_id, area=AREA)
    result = Reconciliation(goal_id, agent_id)
    route = routes.experiment_route(goal_id, agent_id)
    if not route.automation["automatic_ingest"]:
        # explicit off (or no verified route) stops reconciliation: zero provider calls
        result.skipped, result.experiment_status = "automatic_ingest_off", route.status
        return result
    pending = list(selectors.pending_ingests(goal_id, agent_id)[:50])
    for sidecar in progress.track(pending, desc="reconcile ingests", unit="event"):
        result.attempted += 1
        result.events.append(_retry(sidecar, goal_id, agent_id, result))
    return result


def _retry(sidecar: PendingIngest, goal_id: str, agent_id: str, result: Reconciliation):
    """Ingest one sidecar's event again as its first submitter, counted into ``result``;
    an event that is refused or blocked now has its sidecar resolved."""
    try:
        ingested = ingest_event(
            event=sidecar.event.event,
            goal_id=goal_id,
            agent_id=agent_id,
            execute=True,
            principal=_submitter(sidecar.event),
        )
    except RewardMemoryError as exc:
        result.blocked += 1
        PendingIngest.objects.filter(pk=sidecar.pk).update(resolved_at=clock.now())
        return Reconciled(sidecar.event.event_ref, error=exc.code)
    status = ingested.status
    if status == c.INGEST_ACTIVATED:
        result.activated += 1
    elif status in c.INGEST_RETRYABLE:
        result.still_pending += 1
    else:
        result.blocked += 1
        PendingIngest.objects.filter(pk=sidecar.pk, resolved_at__isnull=True).update(
            resolved_at=clock.now()
        )
    return Reconciled(ingested.event_ref, status, ingested.receipt_id)
