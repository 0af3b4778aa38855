"""Stage 3: guarded recall and application receipts.

A ``reward_memory_recall_request_v0`` names exactly one registered corpus and one of its
module-owned surfaces, carries a matching read-authority checkpoint and current
freshness and conflict observations. Any mismatch stops *before* the provider is called
(``guard_blocked``, zero provider calls). LoopX never picks corpora by similarity, never
scans corpora, never derives authority from hits.

Only active, unexpired records of that exact corpus and surface whose provider bytes
read back exactly are returned. Summaries go only into the private result; the public
packet (stored as ``RecallReceipt``) keeps digests and compact lineage.
"""

import datetime as dt
import functools
import hashlib
import time
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from django.db import IntegrityError, connection, transaction

from loopx_site.core import clock, metrics, tracing
from loopx_site.core.canonical import digest_ref, prefixed_id, text_digest_ref
from loopx_site.core.selectors import get_agent
from reward_memory import contracts as c
from reward_memory import providers, selectors
from reward_memory.documents import recall as documents
from reward_memory.domain import guards, loopx, privacy, uris
from reward_memory.domain.guards import Reason
from reward_memory.domain.recall_request import (
    FRESHNESS_WINDOW,
    RecallRequest,
    parse_application,
    parse_recall,
    parse_recall_id,
    recall_id_for,
)
from reward_memory.errors import AREA, RewardMemoryError
from reward_memory.models import HYBRID, ApplicationReceipt, Corpus, MemoryRecord, RecallReceipt
from reward_memory.peers import binding_peer
from reward_memory.services import roles

OVERFETCH = 4
#: an empty recall of a hybrid corpus whose ranking returned nothing: no record clears
#: the relevance floor (``reward_memory.providers.hybrid``)
NOTHING_RELEVANT = "nothing_relevant"
APPLICATION_REASONS = {
    "not_attributed": "the memory refs are not results of this recall",
    "artifact_not_verified": "the current artifact was not verified",
    "recall_not_ok": "the recall returned no exactly read-back results",
    "ignored_by_model": "the model decided not to apply the memory",
    "not_public_safe": "the application carries unsafe or unmodelled fields",
}


@dataclass(frozen=True)
class RecallOutcome:
    """One recall as decided (``documents.recall.recall_result`` renders it: the private
    result with its public packet, or LoopX's ``reward_memory_recall_v0`` when
    ``loopx_request`` holds the inner request of LoopX's packet).

    ``reasons``: the guards that blocked it; ``reason``: why an empty recall is empty
    (``NOTHING_RELEVANT``); ``replay_dropped``: set on a replay of a stored recall (the
    results its re-read dropped, by reason)."""

    request: RecallRequest
    recall_id: str
    status: str
    records: list[MemoryRecord] = field(default_factory=list)
    reasons: list[Reason] = field(default_factory=list)
    calls: int = 0
    filtered: dict[str, int] | None = None
    failure_kind: str | None = None
    reason: str | None = None
    replay_dropped: dict[str, Any] | None = None
    loopx_request: dict[str, Any] | None = None

    @property
    def replayed(self) -> bool:
        return self.replay_dropped is not None


def _hidden(request: RecallRequest, corpus: Corpus | None, viewer: selectors.Viewer) -> bool:
    """A corpus this recall may not see answers exactly like a missing one: absent, not
    readable by the acting (Goal, Agent) — another Goal's, a sibling's private one — or
    not readable by the caller's own scope (a Goal-wide token that named an Agent never
    reaches that Agent's private corpus)."""
    if corpus is None or not privacy.may_read_corpus(corpus, request.goal_id, request.agent_id):
        return True
    return not privacy.visible_to(corpus, viewer)


def _guard(
    request: RecallRequest, corpus: Corpus | None, now: dt.datetime, viewer: selectors.Viewer = None
) -> list[Reason]:
    """Every pre-provider guard; an empty list means the provider may be called."""
    d = request.document
    reasons: list[Reason] = []
    count, budget = len(request.queries), c.MAX_QUERIES[request.mode]
    if count > budget:
        reasons.append(Reason("query_budget_exceeded", "queries"))
    elif count < 1 or (request.mode == c.FUNCTION_BOUNDARY and count != 1):
        reasons.append(Reason("query_count_invalid", "queries"))
    for i, query in enumerate(request.queries):
        if not guards.is_public_safe_text(query):
            reasons.append(Reason("query_not_public_safe", f"queries.{i}"))
    if _hidden(request, corpus, viewer):
        # a corpus the caller may not see is reported exactly like a missing one
        reasons.append(Reason("corpus_not_registered", "corpus_id"))
        return reasons
    if not corpus.active:
        reasons.append(Reason("corpus_not_active", "corpus_id"))
    if not privacy.is_allowlisted(corpus, request.goal_id, request.agent_id):
        reasons.append(Reason("agent_not_allowlisted", "agent_id"))
    if request.project != corpus.project:
        reasons.append(Reason("project_mismatch", "project"))
    if request.surface not in (corpus.surfaces or []):
        reasons.append(Reason("surface_mismatch", "surface"))
    checkpoint = d.get("read_authority")
    if not isinstance(checkpoint, dict) or not checkpoint:
        reasons.append(Reason("read_authority_missing", "read_authority"))
    else:
        if checkpoint.get("verified") is not True:  # a claim: false refuses, true proves nothing
            reasons.append(Reason("read_authority_unverified", "read_authority.verified"))
        ref = checkpoint.get("checkpoint_ref")
        if not isinstance(ref, str) or not ref:
            reasons.append(Reason("read_authority_missing", "read_authority.checkpoint_ref"))
        elif (
            roles.read_authority_record(
                ref,
                corpus=corpus,
                surface=request.surface,
                goal_id=request.goal_id,
                agent_id=request.agent_id,
                now=now,
            )
            is None
        ):  # the ref must name a server record for this caller
            reasons.append(Reason("read_authority_unverified", "read_authority.checkpoint_ref"))
        expected = {
            "corpus_id": corpus.corpus_id,
            "project": corpus.project,
            "surface": request.surface,
            "scope": "read",
        }
        for key, value in expected.items():
            if checkpoint.get(key) != value:
                reasons.append(Reason("read_authority_mismatch", f"read_authority.{key}"))
    freshness = d.get("freshness")
    if not isinstance(freshness, dict):
        reasons.append(Reason("freshness_stale", "freshness"))
    else:
        if freshness.get("corpus_revision") != corpus.revision:
            reasons.append(Reason("revision_mismatch", "freshness.corpus_revision"))
        try:
            observed = clock.parse_rfc3339(freshness.get("observed_at"))
        except (TypeError, ValueError):
            observed = None
        if observed is None or not (now - FRESHNESS_WINDOW <= observed <= now + guards.FUTURE_SKEW):
            reasons.append(Reason("freshness_stale", "freshness.observed_at"))
    conflicts = d.get("conflicts")
    if not isinstance(conflicts, list) or conflicts:
        reasons.append(Reason("unresolved_conflict", "conflicts"))
    if d.get("provider_binding_ref") != corpus.provider_binding_ref:
        reasons.append(Reason("provider_binding_mismatch", "provider_binding_ref"))
    peer = binding_peer(corpus, request.goal_id, request.agent_id)
    claimed = d.get("actor_peer_id")
    if claimed is not None and claimed != peer:
        reasons.append(Reason("actor_peer_mismatch", "actor_peer_id"))
    elif not uris.peer_matches(corpus.provider_scope_ref, peer):
        reasons.append(Reason("actor_peer_mismatch", "agent_id"))
    return reasons


def _observed(service):
    """Times each executed recall of our own request shape (a LoopX packet is counted
    once, by the inner call) into ``loopx_recalls_total`` / ``loopx_recall_duration_seconds``."""

    @functools.wraps(service)
    def observed(*, request: Any, execute: bool = False, **kwargs) -> RecallOutcome:
        if not execute or loopx.is_loopx_packet(request):
            return service(request=request, execute=execute, **kwargs)
        started = time.perf_counter()
        ids = request if isinstance(request, dict) else {}
        with tracing.span(
            "reward_memory.recall",
            goal_digest=tracing.digest(_text(ids.get("goal_id"))),
            agent_digest=tracing.digest(_text(ids.get("agent_id"))),
        ) as current:
            result = service(request=request, execute=execute, **kwargs)
            status = str(result.status or "-")
            if current is not None:
                current.set_attribute("loopx.status", status)
        # A blocked request may name any corpus id: keep the label set bounded.
        corpus = "-" if status == "guard_blocked" else str(result.request.corpus_id or "-")
        metrics.recall_observed(
            area="reward_memory",
            corpus=corpus,
            status=status,
            seconds=time.perf_counter() - started,
        )
        return result

    return observed


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@_observed
def recall(
    *,
    request: Any,
    execute: bool = False,
    goal_id: str | None = None,
    agent_id: str | None = None,
    viewer: selectors.Viewer = None,
) -> RecallOutcome:
    """Run one guarded recall; returns what it decided (the edges render it with
    ``documents.recall.recall_result``: the private result with its public packet).

    ``request`` is our flat ``reward_memory_recall_request_v0`` or LoopX's packet of
    the same name (then ``goal_id``/``agent_id`` — the caller's verified scope — name
    the Agent, and the answer is rendered as LoopX's ``reward_memory_recall_v0``).
    ``viewer`` is the caller's own read scope (``loopx_site.core.access.Acting.viewer``;
    ``None``: an operator or an in-process identity): a corpus outside it is
    ``corpus_not_registered``. Provider failures fail open (``provider_unavailable`` +
    setup guidance); the caller keeps its original output and no user gate is ever raised.
    """
    if loopx.is_loopx_packet(request):
        corpus_id = loopx.packet_corpus_id(request)
        corpus = (
            Corpus.objects.filter(corpus_id=corpus_id).first()
            if isinstance(corpus_id, str)
            else None
        )
        mapped = loopx.from_loopx_packet(request, goal_id=goal_id, agent_id=agent_id, corpus=corpus)
        result = recall(request=mapped, execute=execute, viewer=viewer)
        return replace(result, loopx_request=request["request"])
    parsed, shape = parse_recall(request)
    recall_id = recall_id_for(parsed)
    context = selectors.recall_context(parsed.goal_id, parsed.agent_id, parsed.corpus_id, recall_id)
    if context.agent_pk is None:
        get_agent(parsed.goal_id, parsed.agent_id, area=AREA)  # raises the registration error
        context = selectors.recall_context(
            parsed.goal_id, parsed.agent_id, parsed.corpus_id, recall_id
        )  # registered in between: read again
    corpus = context.corpus
    now = clock.now()
    reasons = guards.normalise(shape + _guard(parsed, corpus, now, viewer))
    if reasons:
        return RecallOutcome(parsed, recall_id, "guard_blocked", reasons=reasons)
    if not execute:
        return RecallOutcome(parsed, recall_id, "preview")
    if context.replay:
        stored = selectors.stored_recall(recall_id)
        if stored is not None:
            return _replay(parsed, stored, now)
    return _execute(parsed, recall_id, corpus, context, now)


def _execute(parsed: RecallRequest, recall_id: str, corpus: Corpus, context, now) -> RecallOutcome:
    """Ask the corpus's provider, accept what reads back exactly and store the recall's
    receipt (a concurrent identical recall answers from the receipt it stored)."""
    binding = selectors.provider_binding(
        corpus, actor_peer_id=binding_peer(corpus, parsed.goal_id, parsed.agent_id)
    )
    try:
        records, filtered, calls = _provider_records(corpus, parsed, binding, now)
    except providers.ProviderUnavailable as exc:
        result = RecallOutcome(
            parsed, recall_id, "provider_unavailable", calls=exc.calls, failure_kind=exc.kind
        )
        return _store(parsed, corpus, context, result)
    # empty because the ranking itself answered nothing: no record clears the relevance floor
    nothing_relevant = not records and corpus.ranking == HYBRID and not any(filtered.values())
    result = RecallOutcome(
        parsed,
        recall_id,
        "ok" if records else "empty",
        records,
        calls=calls,
        filtered=filtered,
        reason=NOTHING_RELEVANT if nothing_relevant else None,
    )
    return _store(parsed, corpus, context, result)


def _provider_records(corpus, parsed, binding, now):
    """The records one recall accepts from its corpus's provider: ``(records, filtered,
    calls)``. A ``ProviderUnavailable`` leaves with ``calls``, the calls made before it."""
    calls = 0
    wide = min(parsed.limit * OVERFETCH, 50)
    ranking = corpus.ranking

    def rank(limit: int) -> list[list[str]]:
        nonlocal calls
        ranked = []
        for i, query in enumerate(parsed.queries):
            calls = max(calls, i + 1)  # (a widened ranking is the same call, widened)
            ranked.append(
                provider.rank(
                    binding, surface=parsed.surface, query=query, limit=limit, ranking=ranking
                )
            )
        return ranked

    try:
        with tracing.span("reward_memory.provider.recall", provider=corpus.provider_id):
            provider = providers.get(corpus.provider_id)
            if provider.in_database:  # refs only: the bytes come with the records
                records, filtered = _accept_ranked(
                    corpus, parsed, rank, wide, now, binding.scope_key
                )
            else:
                hits = []
                for query in parsed.queries:
                    calls += 1
                    hits.append(
                        provider.recall(binding, surface=parsed.surface, query=query, limit=wide)
                    )
                records, filtered = _accept(corpus, parsed, hits, now)
    except providers.ProviderUnavailable as exc:
        exc.calls = calls
        raise
    return records, filtered, calls


def _result_rows():
    """Records with just the columns a recall result needs (``selectors.RESULT_COLUMNS``;
    no provider content)."""
    columns = [name for name in selectors.RESULT_COLUMNS if name not in ("id", "review_id")]
    return MemoryRecord.objects.select_related("review").only(*columns, "review__review_id")


def _accept_ranked(corpus: Corpus, request: RecallRequest, rank, wide: int, now, scope_key: str):
    """``_accept`` over an in-database provider's rankings of ``wide`` refs per query —
    ranking only ``request.limit`` per query first, which usually decides the answer:
    when those fix the first ``limit`` refs of the combined order and all of them are
    accepted, the wide rankings would give the same records and counts (``_accept``
    reads no further), so they are never computed. Otherwise the queries are ranked
    wide and accepted as ever."""
    limit = request.limit
    if wide <= limit:
        return _accept(corpus, request, rank(wide), now, scope_key)
    short = rank(limit)
    order = list(dict.fromkeys(ref for refs in short for ref in refs))
    if len(order) < limit:  # no query has ``limit`` matches: the wide rankings are these
        return _accept(corpus, request, short, now, scope_key)
    # A query ranked ``limit`` deep may hold more matches, but the first query with
    # ``limit`` of them brings the combined order to ``limit`` refs: its first ``limit``
    # are the wide order's.
    records, filtered = _accept(corpus, request, [order[:limit]], now, scope_key)
    if len(records) == limit:
        return records, filtered
    return _accept(corpus, request, rank(wide), now, scope_key)


def _accept(corpus: Corpus, request: RecallRequest, hits, now, documents_of: str | None = None):
    """Keep only records the (Goal, Agent) may read (``selectors.readable_records``:
    active, unexpired, read back, hard_policy with a live checkpoint) of this
    corpus+surface whose provider bytes match the record's canonical content digest
    exactly; rank by first appearance.

    ``hits`` are, per query, the provider's ``RecallItem``s — or, with ``documents_of``
    (a provider ``in_database``), its ranked refs, whose bytes are read in the statement
    that reads their records (a ref without a recallable document is no item, as in
    ``LocalProvider.recall``). One statement reads the first ``limit`` refs; a second
    reads the others only when some of those were filtered out."""
    order: dict[str, bytes | None] = {}
    for items in hits:
        for item in items:
            if documents_of is None:
                order.setdefault(item.resource_ref, item.content)
            else:
                order.setdefault(item, None)
    filtered = {
        "not_active": 0,
        "expired": 0,
        "not_readable": 0,
        "readback_mismatch": 0,
        "unknown": 0,
    }
    accepted: list[MemoryRecord] = []
    refs = list(order)
    reader = {"goal_id": request.goal_id, "agent_id": request.agent_id, "corpus": corpus}
    # the first ``limit`` refs usually fill the answer; the rest is read only when some
    # of them are filtered (at 1M records every row read is a cold page or two)
    for batch in (refs[: request.limit], refs[request.limit :]):
        if not batch or len(accepted) >= request.limit:
            break
        rows, contents = selectors.recall_read(batch, now=now, documents_of=documents_of, **reader)
        for resource_ref in batch:
            content = order[resource_ref]
            if documents_of is not None:
                text = contents.get(resource_ref)
                if text is None:
                    continue  # not a recallable document: the provider returns no such item
                content = text.encode("utf-8")
            row = rows.get(resource_ref)
            if row is None or row.surface != request.surface:
                filtered["unknown"] += 1
            elif row.lifecycle_state != c.ACTIVE:
                filtered["not_active"] += 1
            elif row.expired:
                filtered["expired"] += 1
            elif not row.readable:
                filtered["not_readable"] += 1
            elif "sha256:" + hashlib.sha256(content).hexdigest() != row.content_digest:
                filtered["readback_mismatch"] += 1
            else:
                accepted.append(row.record())
            if len(accepted) >= request.limit:
                break
    return accepted, filtered


_RECEIPT_FIELDS = [f for f in RecallReceipt._meta.concrete_fields if not f.primary_key]


def _receipt_insert_sql() -> str:
    """One ``INSERT … ON CONFLICT (recall_id) DO NOTHING`` (SQLite and PostgreSQL): a
    concurrent identical recall is a row count of 0, not an error — no savepoint inside
    a caller's transaction, no ORM statement building on every recall."""
    qn = connection.ops.quote_name
    return (
        f"INSERT INTO {qn(RecallReceipt._meta.db_table)} "  # noqa: S608 - quoted model names
        f"({', '.join(qn(f.column) for f in _RECEIPT_FIELDS)}) "
        f"VALUES ({', '.join(['%s'] * len(_RECEIPT_FIELDS))}) "
        f"ON CONFLICT ({qn('recall_id')}) DO NOTHING"
    )


def _store(
    request: RecallRequest,
    corpus: Corpus,
    context: selectors.RecallContext,
    result: RecallOutcome,
) -> RecallOutcome:
    """Store the recall's receipt: its public packet, rendered once, here."""
    packet = documents.public_packet(result)
    values = {
        "recall_id": result.recall_id,
        "corpus_id": corpus.pk,
        "goal_id": context.goal_pk,
        "agent_id": context.agent_pk,
        "surface": request.surface,
        "mode": request.mode,
        "status": result.status,
        "query_count": len(request.queries),
        "result_refs": [r.record_ref for r in result.records],
        "packet": packet,
        "provider_calls": result.calls,
        "created_at": clock.now(),
    }
    params = [f.get_db_prep_save(values[f.attname], connection) for f in _RECEIPT_FIELDS]
    with connection.cursor() as cursor:
        cursor.execute(_receipt_insert_sql(), params)
        inserted = cursor.rowcount
    if not inserted:  # the same recall ran concurrently: answer from its receipt
        return _replay(request, RecallReceipt.objects.get(recall_id=result.recall_id), clock.now())
    return result


def _replay(request: RecallRequest, stored: RecallReceipt, now) -> RecallOutcome:
    """Same recall id → the stored identity, its results re-read now: only the records
    ``selectors.replay_readable`` still passes (``replay_dropped`` counts the others, by
    reason); no provider call, no second receipt row."""
    kept, dropped = selectors.replay_readable(
        stored.result_refs,
        goal_id=request.goal_id,
        agent_id=request.agent_id,
        corpus=stored.corpus,
        now=now,
    )
    rows = {r.record_ref: r for r in _result_rows().filter(record_ref__in=kept)}
    records = [rows[ref] for ref in kept if ref in rows]
    return RecallOutcome(
        request,
        stored.recall_id,
        stored.status if records or stored.status != "ok" else "empty",
        records,
        filtered=stored.packet.get("filtered"),
        replay_dropped=dropped,
    )


# -- the in-process entry point (turn recall) ---------------------------------------------------
@dataclass(frozen=True)
class RecallGuidance:
    """One function-boundary recall for an in-process caller: its status and id, the
    records it returned (private: the caller renders them with
    ``documents.recall.private_item``), the ``outcome`` as decided (``None`` when the
    recall was refused; its public packet is ``documents.recall.public_packet``), the
    provider calls and the guards' reasons (normalised)."""

    status: str
    recall_id: str | None
    records: list[MemoryRecord]
    outcome: RecallOutcome | None
    provider_calls: int
    reasons: list[Reason]
    nothing_relevant: bool = False  # empty because nothing clears the relevance floor


def recall_guidance(
    *,
    goal_id: str,
    agent_id: str,
    corpus_id: str,
    surface: str,
    query: str,
    limit: int = 4,
    request_id: str | None = None,
    viewer: selectors.Viewer = None,
) -> RecallGuidance:
    """One function-boundary recall (one query) for one corpus and surface, for an
    in-process caller with a registered runtime identity (e.g. agent turn recall).

    The read authority is the runtime identity's own allowlist entry (resolved by the
    server: verified only when the corpus allowlists this Goal/Agent); the actor peer is
    the configured binding's (never the corpus URI's). ``viewer`` is the caller's own
    read scope, as for ``recall``. Never raises for guard or provider conditions.
    """
    # the Agent and the corpus in one statement (no recall id yet: its replay flag is
    # read again with the recall's own context)
    context = selectors.recall_context(goal_id, agent_id, corpus_id, "")
    if context.agent_pk is None:
        get_agent(goal_id, agent_id, area=AREA)  # raises the validation/registration error
    corpus = context.corpus
    request = c.recall_request(
        goal_id=goal_id,
        agent_id=agent_id,
        corpus_id=corpus_id,
        project=corpus.project if corpus else "unregistered",
        surface=surface,
        mode=c.FUNCTION_BOUNDARY,
        queries=[query],
        limit=limit,
        read_authority={
            "checkpoint_ref": roles.allowlist_read_ref(goal_id, agent_id),
            "verified": True,
            "corpus_id": corpus_id,
            "project": corpus.project if corpus else None,
            "surface": surface,
        },
        observed_at=clock.iso(clock.now()),
        corpus_revision=corpus.revision if corpus else None,
        conflicts=[],
        provider_binding_ref=corpus.provider_binding_ref if corpus else None,
    )
    if request_id is not None:
        request["request_id"] = request_id
    try:
        result = recall(request=request, execute=True, viewer=viewer)
    except RewardMemoryError as exc:
        if exc.code in ("goal_not_registered", "agent_not_registered"):
            raise
        return RecallGuidance("guard_blocked", None, [], None, 0, [Reason(exc.code, exc.field)])
    return RecallGuidance(
        status=result.status,
        recall_id=result.recall_id,
        records=list(result.records),
        outcome=result,
        provider_calls=result.calls,
        reasons=guards.normalise(result.reasons),
        nothing_relevant=result.reason == NOTHING_RELEVANT,
    )


# -- application receipts ---------------------------------------------------------------------
@dataclass(frozen=True)
class Verdict:
    """What ``record_application`` decided about one application: the receipt's id and
    status, the reasons it is not applied, the memory refs' digests, the artifact's
    verification and whether every ref is a result of the recall
    (``documents.recall.application_receipt`` renders it)."""

    receipt_id: str
    status: str
    reasons: list[str]
    ref_digests: list[str]
    artifact: dict[str, Any]
    attributed: bool


@dataclass(frozen=True)
class ApplicationOutcome:
    """What ``record_application`` answers (``documents.recall.application`` renders it):
    the recall reported on, the parsed application and the ``Verdict``; ``stored`` is the
    receipt kept on its ``ApplicationReceipt`` row once recorded (rendered once, as it was
    stored), ``None`` for a preview or an application refused as a whole."""

    recall: RecallReceipt
    application: Any  # ``domain.recall_request.Application``
    verdict: Verdict
    stored: dict[str, Any] | None = None
    #: an application never stops the host for a person: it fails open
    user_gate: ClassVar[bool] = False

    @property
    def recorded(self) -> bool:
        return self.stored is not None

    @property
    def status(self) -> str:
        return self.stored["status"] if self.stored is not None else self.verdict.status


def require_receipt_author(caller, recall_id: str):
    """The recall an application receipt reports on, if ``caller`` may post one: the
    receipt is the recalling Agent's own act (dogfood batches count it as that Agent's),
    so only that Agent's own token or an operator may — a Goal-wide token may not post
    one for an Agent of its Goal. A recall the caller may not see answers as missing."""
    recall = selectors.get_recall(recall_id, viewer=caller.viewer)
    acting = caller.acting_for(recall.goal.goal_id, recall.agent.agent_id, area=AREA)
    acting.require_own_agent("An application receipt", field="recall_id", area=AREA)
    return recall


def record_application(*, document: Any, execute: bool = False) -> ApplicationOutcome:
    """The application receipt of one recall (``reward_memory_application_receipt_v0``,
    rendered once when it is recorded): its ``ApplicationOutcome``.

    ``applied`` only when every memory ref is a result of this recall (attributed), the
    recall read its results back exactly, and the current artifact was verified;
    ``refuted`` needs the same evidence. Anything else is ``not_applied`` (fail open).
    """
    stored = selectors.get_recall(parse_recall_id(document))
    application = parse_application(document)
    recall_id, decision, shape = application.recall_id, application.decision, application.shape
    memory_refs, reasoning = application.memory_refs, application.reasoning
    verification = application.verification
    reasons: list[str] = []
    if shape:
        reasons.append("not_public_safe")
    attributed = bool(memory_refs) and set(memory_refs) <= set(stored.result_refs)
    verified = verification.get("verified") is True and bool(verification.get("artifact_digest"))
    if shape:
        pass  # refused as a whole: nothing else is judged
    elif decision == "ignore":
        reasons.append("ignored_by_model")
    else:
        if not attributed:
            reasons.append("not_attributed")
        elif decision == "apply":
            # the stored recall is re-read now: a record retired, revoked, superseded or
            # expired since it was recalled is never applied
            _, dropped = selectors.replay_readable(
                memory_refs,
                goal_id=stored.goal.goal_id,
                agent_id=stored.agent.agent_id,
                corpus=stored.corpus,
            )
            if dropped["count"]:
                reasons.append("memory_not_readable")
        if stored.status != "ok":
            reasons.append("recall_not_ok")
        if not verified:
            reasons.append("artifact_not_verified")
    if reasons or decision == "ignore":
        status = "not_applied"
    else:
        status = "applied" if decision == "apply" else "refuted"
    ref_digests = sorted(digest_ref(ref) for ref in memory_refs)
    artifact = {
        "artifact_ref_digest": digest_ref(verification["artifact_ref"]) if verification else None,
        "artifact_digest": verification.get("artifact_digest"),
        "verified": verified,
    }
    receipt_id = prefixed_id(
        "rma_",
        {
            "recall_id": recall_id,
            "decision": decision,
            "memory_ref_digests": ref_digests,
            "artifact": artifact,
            "reasoning_digest": text_digest_ref(reasoning) if reasoning else None,
        },
    )
    verdict = Verdict(receipt_id, status, reasons, ref_digests, artifact, attributed)
    if not execute or shape:
        return ApplicationOutcome(stored, application, verdict)
    receipt = documents.application_receipt(stored, application, verdict, recorded=True)
    try:
        with transaction.atomic():
            row, _ = ApplicationReceipt.objects.get_or_create(
                application_receipt_id=receipt_id,
                defaults={
                    "recall": stored,
                    "corpus": stored.corpus,
                    "decision": decision,
                    "status": status,
                    "receipt": receipt,
                    "created_at": clock.now(),
                },
            )
    except IntegrityError:
        row = ApplicationReceipt.objects.get(application_receipt_id=receipt_id)
    return ApplicationOutcome(stored, application, verdict, stored=row.receipt)
