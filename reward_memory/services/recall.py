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
import hashlib
import re
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from loopx_site.core import clock
from loopx_site.core.canonical import digest_ref, nfc, prefixed_id, text_digest_ref
from loopx_site.core.selectors import get_agent
from reward_memory import contracts as c
from reward_memory import guards, providers, selectors, uris
from reward_memory import validation as v
from reward_memory.errors import AREA, RewardMemoryError
from reward_memory.guards import Reason
from reward_memory.models import ApplicationReceipt, Corpus, MemoryRecord, RecallReceipt

RECALL_ID_RE = re.compile(r"^rmc_[0-9a-f]{64}$")
MEMORY_REF_RE = re.compile(r"^rmr_[0-9a-f]{64}$")
FRESHNESS_WINDOW = dt.timedelta(minutes=10)
MAX_LIMIT = 20
MAX_QUERY_CHARS = 500
OVERFETCH = 4
SETUP_GUIDANCE = (
    "The corpus provider is not reachable; continue with the original output. Check the "
    "provider binding with `manage.py reward_memory corpora` (health: index_present)."
)
APPLICATION_REASONS = {
    "not_attributed": "the memory refs are not results of this recall",
    "artifact_not_verified": "the current artifact was not verified",
    "recall_not_ok": "the recall returned no exactly read-back results",
    "ignored_by_model": "the model decided not to apply the memory",
    "not_public_safe": "the application carries unsafe or unmodelled fields",
}


@dataclass
class _Request:
    goal_id: str
    agent_id: str
    corpus_id: str
    project: str
    surface: str
    mode: str
    queries: list[str]
    limit: int
    document: dict[str, Any]


def _parse(document: Any) -> tuple[_Request, list[Reason]]:
    v.schema(document, c.RECALL_REQUEST_SCHEMA)
    d = nfc(document)
    shape = [
        r for r in guards.scan(d, guards.RECALL_SHAPE) if not (r.field or "").startswith("queries")
    ]
    goal_id = v.identifier(d.get("goal_id"), "goal_id")
    agent_id = v.identifier(d.get("agent_id"), "agent_id")
    corpus_id = v.identifier(d.get("corpus_id"), "corpus_id")
    project = v.project(d.get("project"), "project")
    surface = v.surface(d.get("surface"), "surface")
    mode = v.choice(d.get("mode"), "mode", c.RECALL_MODES)
    queries = v.string_list(
        d.get("queries"),
        "queries",
        lambda q, f: v.text(q, f, max_length=MAX_QUERY_CHARS),
        max_items=16,
        required=True,
    )
    limit = v.integer(d.get("limit", 4), "limit", minimum=1, maximum=MAX_LIMIT)
    request = _Request(goal_id, agent_id, corpus_id, project, surface, mode, queries, limit, d)
    return request, shape


def _guard(request: _Request, corpus: Corpus | None, now: dt.datetime) -> list[Reason]:
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
    if corpus is None or not selectors.goal_allowlisted(corpus, request.goal_id):
        # another Goal's corpus is reported exactly like a missing one
        reasons.append(Reason("corpus_not_registered", "corpus_id"))
        return reasons
    if not corpus.active:
        reasons.append(Reason("corpus_not_active", "corpus_id"))
    if not selectors.is_allowlisted(corpus, request.goal_id, request.agent_id):
        reasons.append(Reason("agent_not_allowlisted", "agent_id"))
    if request.project != corpus.project:
        reasons.append(Reason("project_mismatch", "project"))
    if request.surface not in (corpus.surfaces or []):
        reasons.append(Reason("surface_mismatch", "surface"))
    checkpoint = d.get("read_authority")
    if not isinstance(checkpoint, dict) or not checkpoint:
        reasons.append(Reason("read_authority_missing", "read_authority"))
    else:
        if checkpoint.get("verified") is not True:
            reasons.append(Reason("read_authority_unverified", "read_authority.verified"))
        if (
            not isinstance(checkpoint.get("checkpoint_ref"), str)
            or not checkpoint["checkpoint_ref"]
        ):
            reasons.append(Reason("read_authority_missing", "read_authority.checkpoint_ref"))
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
            observed = clock.parse_iso_z(freshness.get("observed_at"))
        except (TypeError, ValueError):
            observed = None
        if observed is None or not (now - FRESHNESS_WINDOW <= observed <= now + guards.FUTURE_SKEW):
            reasons.append(Reason("freshness_stale", "freshness.observed_at"))
    conflicts = d.get("conflicts")
    if not isinstance(conflicts, list) or conflicts:
        reasons.append(Reason("unresolved_conflict", "conflicts"))
    if d.get("provider_binding_ref") != corpus.provider_binding_ref:
        reasons.append(Reason("provider_binding_mismatch", "provider_binding_ref"))
    peer = selectors.binding_peer(corpus, request.goal_id, request.agent_id)
    claimed = d.get("actor_peer_id")
    if claimed is not None and claimed != peer:
        reasons.append(Reason("actor_peer_mismatch", "actor_peer_id"))
    elif not uris.peer_matches(corpus.provider_scope_ref, peer):
        reasons.append(Reason("actor_peer_mismatch", "agent_id"))
    return reasons


def recall_id_for(request: _Request) -> str:
    d = request.document
    return prefixed_id(
        "rmc_",
        {
            "goal_id": request.goal_id,
            "agent_id": request.agent_id,
            "corpus_id": request.corpus_id,
            "surface": request.surface,
            "mode": request.mode,
            "query_digests": [text_digest_ref(q) for q in request.queries],
            "limit": request.limit,
            "observed_at": (d.get("freshness") or {}).get("observed_at"),
            "request_id": d.get("request_id"),
        },
    )


# -- LoopX's request packet ---------------------------------------------------------------------
LOOPX_RECALL_SCHEMA = "reward_memory_recall_v0"
LOOPX_STATUS = {"ok": "completed", "empty": "empty"}


def is_loopx_packet(document: Any) -> bool:
    """LoopX builds ``reward_memory_recall_request_v0`` as a packet with ``corpus``,
    ``request`` and ``read_authority_checkpoint`` objects (ours is flat)."""
    return (
        isinstance(document, dict)
        and document.get("schema_version") == c.RECALL_REQUEST_SCHEMA
        and isinstance(document.get("request"), dict)
        and isinstance(document.get("corpus"), dict)
    )


def from_loopx_packet(document: dict[str, Any], *, goal_id: Any, agent_id: Any) -> dict[str, Any]:
    """Map LoopX's packet onto our request. The Goal/Agent come from the caller's
    verified scope (token or command flags), never from the packet; the packet's own
    ``guard`` verdict is ignored (we guard again). LoopX has no corpus revision or
    binding digest: the current ones are used, every other guard still applies."""
    inner = document["request"]
    corpus_id = document["corpus"].get("corpus_id")
    checkpoint = document.get("read_authority_checkpoint")
    checkpoint = checkpoint if isinstance(checkpoint, dict) else {}
    queries = inner.get("queries")
    corpus = (
        Corpus.objects.filter(corpus_id=corpus_id).first() if isinstance(corpus_id, str) else None
    )
    return {
        "schema_version": c.RECALL_REQUEST_SCHEMA,
        "goal_id": goal_id,
        "agent_id": agent_id,
        "corpus_id": corpus_id,
        "project": inner.get("project_ref"),
        "surface": inner.get("surface_id"),
        "mode": inner.get("mode"),
        "queries": [q.get("query") if isinstance(q, dict) else q for q in queries]
        if isinstance(queries, list)
        else queries,
        "limit": inner.get("limit", 4),
        "read_authority": {
            "checkpoint_ref": checkpoint.get("source_ref"),
            "verified": checkpoint.get("verified"),
            "corpus_id": checkpoint.get("corpus_id"),
            "project": checkpoint.get("project_ref"),
            "surface": checkpoint.get("surface_id"),
            "scope": "read",
        },
        "freshness": {
            "observed_at": inner.get("observed_at"),
            "corpus_revision": corpus.revision if corpus else None,
        },
        "conflicts": [] if inner.get("conflict_state") == "clear" else ["conflict_state"],
        "provider_binding_ref": corpus.provider_binding_ref if corpus else None,
    }


def _loopx_answer(result: dict[str, Any], inner: dict[str, Any]) -> dict[str, Any]:
    """LoopX's ``reward_memory_recall_v0`` fields over our private result."""
    status = LOOPX_STATUS.get(result["status"], result["status"])
    items = result["items"]
    return {
        **result,
        "ok": True,
        "schema_version": LOOPX_RECALL_SCHEMA,
        "result_schema_version": c.RECALL_RESULT_SCHEMA,
        "status": status,
        "surface_id": result["surface"],
        "query_kind": inner.get("query_kind") or "business_recall",
        "result_count": len(items),
        "results": [
            {
                "memory_ref": item["memory_ref_digest"],
                "candidate_ref": item["candidate_ref"],
                "target_class": item["memory_class"],
                "content_summary": None,
                "content_exposed": False,
            }
            for item in items
        ],
        "result_readback_verified": bool(items),
        "provider_call_count": result["provider_calls"],
        "reason_codes": [r["code"] for r in result["guard"]["reasons"]],
        "automatic_recall": False,
        "fail_open": True,
        "provider_failure_is_user_gate": False,
        "external_writes_performed": False,
        "raw_provider_payload_captured": False,
        "raw_content_persisted": False,
    }


def recall(
    *,
    request: Any,
    execute: bool = False,
    goal_id: str | None = None,
    agent_id: str | None = None,
) -> dict[str, Any]:
    """Run one guarded recall; returns the private result (with its public packet).

    ``request`` is our flat ``reward_memory_recall_request_v0`` or LoopX's packet of
    the same name (then ``goal_id``/``agent_id`` — the caller's verified scope — name
    the Agent, and the answer is LoopX's ``reward_memory_recall_v0``).
    Provider failures fail open (``provider_unavailable`` + setup guidance); the caller
    keeps its original output and no user gate is ever raised.
    """
    if is_loopx_packet(request):
        inner = request["request"]
        mapped = from_loopx_packet(request, goal_id=goal_id, agent_id=agent_id)
        return _loopx_answer(recall(request=mapped, execute=execute), inner)
    parsed, shape = _parse(request)
    agent = get_agent(parsed.goal_id, parsed.agent_id, area=AREA)
    corpus = Corpus.objects.filter(corpus_id=parsed.corpus_id).first()
    now = clock.now()
    reasons = guards.normalise(shape + _guard(parsed, corpus, now))
    recall_id = recall_id_for(parsed)
    if reasons:
        return _result(parsed, recall_id, "guard_blocked", [], reasons=reasons)
    if not execute:
        return _result(parsed, recall_id, "preview", [])
    stored = RecallReceipt.objects.filter(recall_id=recall_id).first()
    if stored is not None:
        return _replay(parsed, stored, now)
    binding = selectors.provider_binding(
        corpus, actor_peer_id=selectors.binding_peer(corpus, parsed.goal_id, parsed.agent_id)
    )
    calls = 0
    try:
        provider = providers.get(corpus.provider_id)
        hits = []
        for query in parsed.queries:
            calls += 1
            hits.append(
                provider.recall(
                    binding,
                    surface=parsed.surface,
                    query=query,
                    limit=min(parsed.limit * OVERFETCH, 50),
                )
            )
    except providers.ProviderUnavailable as exc:
        result = _result(
            parsed, recall_id, "provider_unavailable", [], calls=calls, failure_kind=exc.kind
        )
        _store(parsed, corpus, agent, result)
        return result
    records, filtered = _accept(corpus, parsed, hits, now)
    status = "ok" if records else "empty"
    result = _result(parsed, recall_id, status, records, calls=calls, filtered=filtered)
    return _store(parsed, corpus, agent, result, records)


def _result_rows():
    """Records with just the columns a recall result needs (no provider content)."""
    return MemoryRecord.objects.select_related("review").only(
        "record_ref",
        "candidate_ref",
        "memory_class",
        "surface",
        "summary",
        "content_digest",
        "activation_basis",
        "policy_digest",
        "confidence_level",
        "authority",
        "lifecycle_state",
        "expires_at",
        "provider_resource_ref",
        "provider_ref_digest",
        "review__review_id",
    )


def _accept(corpus: Corpus, request: _Request, hits, now):
    """Keep only records the (Goal, Agent) may read (``selectors.readable_records``:
    active, unexpired, read back, hard_policy with a live checkpoint) of this
    corpus+surface whose provider bytes match the record's canonical content digest
    exactly; rank by first appearance."""
    order: dict[str, bytes] = {}
    for items in hits:
        for item in items:
            order.setdefault(item.resource_ref, item.content)
    readable = set(
        selectors.readable_records(
            goal_id=request.goal_id, agent_id=request.agent_id, corpus=corpus, now=now
        )
        .filter(provider_resource_ref__in=list(order))
        .values_list("pk", flat=True)
    )
    rows = {
        r.provider_resource_ref: r
        for r in _result_rows().filter(corpus=corpus, provider_resource_ref__in=list(order))
    }
    filtered = {
        "not_active": 0,
        "expired": 0,
        "not_readable": 0,
        "readback_mismatch": 0,
        "unknown": 0,
    }
    accepted = []
    for resource_ref, content in order.items():
        record = rows.get(resource_ref)
        if record is None or record.surface != request.surface:
            filtered["unknown"] += 1
        elif record.lifecycle_state != c.ACTIVE:
            filtered["not_active"] += 1
        elif record.expires_at is not None and record.expires_at <= now:
            filtered["expired"] += 1
        elif record.pk not in readable:
            filtered["not_readable"] += 1
        elif "sha256:" + hashlib.sha256(content).hexdigest() != record.content_digest:
            filtered["readback_mismatch"] += 1
        else:
            accepted.append(record)
        if len(accepted) >= request.limit:
            break
    return accepted, filtered


def _private_item(record: MemoryRecord) -> dict[str, Any]:
    authority = record.authority or {}
    return {
        "memory_ref": record.record_ref,
        "memory_ref_digest": digest_ref(record.record_ref),
        "candidate_ref": record.candidate_ref,
        "memory_class": record.memory_class,
        "summary": record.summary,
        "confidence": record.confidence_level,
        "authority": authority.get("kind", "advisory"),
        "action_scopes": authority.get("action_scopes", []),
        "requires_artifact_verification": record.memory_class == c.PROCEDURAL_EXPERIENCE,
        "applicability_note": _applicability(record),
        "expires_at": clock.iso(record.expires_at),
    }


def _applicability(record: MemoryRecord) -> str:
    if record.memory_class == c.HARD_POLICY:
        return "constraint inside its verified action scopes only; grants nothing new"
    if record.memory_class == c.PROCEDURAL_EXPERIENCE:
        return "advice only after verification against the current artifact"
    if record.memory_class == c.RUN_BOUND_REWARD:
        return "evidence about one run; not an instruction"
    if record.memory_class == c.WORKING_CONTEXT:
        return "current execution only; current source of truth wins"
    return "advisory ranking or rewrite only"


def _result(
    request: _Request,
    recall_id: str,
    status: str,
    records: list[MemoryRecord],
    *,
    reasons: list[Reason] | None = None,
    calls: int = 0,
    filtered: dict[str, int] | None = None,
    failure_kind: str | None = None,
) -> dict[str, Any]:
    packet = {
        "schema_version": c.RECALL_PACKET_SCHEMA,
        "recall_id": recall_id,
        "status": status,
        "goal_id": request.goal_id,
        "agent_id": request.agent_id,
        "corpus_id": request.corpus_id,
        "surface": request.surface,
        "mode": request.mode,
        "query_count": len(request.queries),
        "query_digests": [text_digest_ref(q) for q in request.queries],
        "items": [selectors.record_public(r) for r in records],
        "filtered": filtered or {},
        "provider_calls": calls,
        "failure_kind": failure_kind,
        "guard": {
            "status": c.GUARD_BLOCKED if reasons else c.GUARD_PASSED,
            "reasons": guards.payload(reasons or []),
        },
        "authority_derived_from_hits": False,
        "user_gate": False,
    }
    return {
        "schema_version": c.RECALL_RESULT_SCHEMA,
        "status": status,
        "recall_id": recall_id,
        "corpus_id": request.corpus_id,
        "surface": request.surface,
        "mode": request.mode,
        "items": [_private_item(r) for r in records],
        "provider_calls": calls,
        "setup_guidance": SETUP_GUIDANCE if status == "provider_unavailable" else None,
        "guard": packet["guard"],
        "public_packet": packet,
    }


def _store(request: _Request, corpus: Corpus, agent, result: dict, records=()) -> dict[str, Any]:
    try:
        with transaction.atomic():
            RecallReceipt.objects.create(
                recall_id=result["recall_id"],
                corpus=corpus,
                goal=agent.goal,
                agent=agent,
                surface=request.surface,
                mode=request.mode,
                status=result["status"],
                query_count=len(request.queries),
                result_refs=[r.record_ref for r in records],
                packet=result["public_packet"],
                provider_calls=result["provider_calls"],
                created_at=clock.now(),
            )
    except IntegrityError:  # the same recall ran concurrently: answer from its receipt
        return _replay(
            request, RecallReceipt.objects.get(recall_id=result["recall_id"]), clock.now()
        )
    return result


def _replay(request: _Request, stored: RecallReceipt, now) -> dict[str, Any]:
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
    result = _result(
        request,
        stored.recall_id,
        stored.status if records or stored.status != "ok" else "empty",
        records,
        filtered=stored.packet.get("filtered"),
    )
    result["replayed"] = True
    result["replay_dropped"] = dropped
    return result


# -- the in-process entry point (turn recall) ---------------------------------------------------
@dataclass
class RecallGuidance:
    status: str
    recall_id: str | None
    items: list[dict[str, Any]]  # private: summaries for the in-process caller only
    public_packet: dict[str, Any] | None
    provider_calls: int
    reasons: list[dict[str, Any]]


def recall_guidance(
    *,
    goal_id: str,
    agent_id: str,
    corpus_id: str,
    surface: str,
    query: str,
    limit: int = 4,
    request_id: str | None = None,
) -> RecallGuidance:
    """One function-boundary recall (one query) for one corpus and surface, for an
    in-process caller with a registered runtime identity (e.g. agent turn recall).

    The read-authority checkpoint is the runtime identity itself: verified only when the
    corpus allowlists this Goal/Agent; the actor peer is the configured binding's (never
    the corpus URI's). Never raises for guard or provider conditions.
    """
    get_agent(goal_id, agent_id, area=AREA)
    corpus = Corpus.objects.filter(corpus_id=corpus_id).first()
    request = {
        "schema_version": c.RECALL_REQUEST_SCHEMA,
        "goal_id": goal_id,
        "agent_id": agent_id,
        "corpus_id": corpus_id,
        "project": corpus.project if corpus else "unregistered",
        "surface": surface,
        "mode": c.FUNCTION_BOUNDARY,
        "queries": [query],
        "limit": limit,
        "read_authority": {
            "checkpoint_ref": f"runtime:{goal_id}/{agent_id}",
            "verified": bool(corpus and selectors.is_allowlisted(corpus, goal_id, agent_id)),
            "corpus_id": corpus_id,
            "project": corpus.project if corpus else None,
            "surface": surface,
            "scope": "read",
        },
        "freshness": {
            "observed_at": clock.iso(clock.now()),
            "corpus_revision": corpus.revision if corpus else None,
        },
        "conflicts": [],
        "provider_binding_ref": corpus.provider_binding_ref if corpus else None,
    }
    if request_id is not None:
        request["request_id"] = request_id
    try:
        result = recall(request=request, execute=True)
    except RewardMemoryError as exc:
        if exc.code in ("goal_not_registered", "agent_not_registered"):
            raise
        return RecallGuidance(
            "guard_blocked", None, [], None, 0, [{"code": exc.code, "field": exc.field}]
        )
    return RecallGuidance(
        status=result["status"],
        recall_id=result["recall_id"],
        items=result["items"],
        public_packet=result["public_packet"],
        provider_calls=result["provider_calls"],
        reasons=result["guard"]["reasons"],
    )


# -- application receipts ---------------------------------------------------------------------
APPLICATION_SHAPE = {
    "schema_version": None,
    "recall_id": None,
    "decision": None,
    "memory_refs": None,
    "reasoning_summary": None,
    "artifact_verification": {"artifact_ref": None, "artifact_digest": None, "verified": None},
}


def record_application(*, document: Any, execute: bool = False) -> dict[str, Any]:
    """``reward_memory_application_receipt_v0`` for one recall.

    ``applied`` only when every memory ref is a result of this recall (attributed), the
    recall read its results back exactly, and the current artifact was verified;
    ``refuted`` needs the same evidence. Anything else is ``not_applied`` (fail open).
    """
    v.schema(document, c.APPLICATION_SCHEMA)
    d = nfc(document)
    recall_id = v.pattern(d.get("recall_id"), "recall_id", RECALL_ID_RE, what="a recall id")
    stored = selectors.get_recall(recall_id)
    decision = v.choice(d.get("decision"), "decision", c.APPLICATION_DECISIONS)
    shape = guards.scan(d, APPLICATION_SHAPE)
    memory_refs = (
        v.string_list(
            d.get("memory_refs"),
            "memory_refs",
            lambda x, f: v.pattern(x, f, MEMORY_REF_RE, what="a memory ref (rmr_<hex>)"),
            max_items=20,
        )
        if not shape
        else []
    )
    reasoning = None
    verification = {}
    if not shape:
        reasoning = v.text(d.get("reasoning_summary"), "reasoning_summary", max_length=600)
        verification = v.obj(d.get("artifact_verification"), "artifact_verification")
        v.ref(verification.get("artifact_ref"), "artifact_verification.artifact_ref")
        v.digest(
            verification.get("artifact_digest"),
            "artifact_verification.artifact_digest",
            required=False,
        )
        v.boolean(verification.get("verified"), "artifact_verification.verified")
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
    receipt = {
        "schema_version": c.APPLICATION_RECEIPT_SCHEMA,
        "application_receipt_id": receipt_id,
        "recall_id": recall_id,
        "corpus_id": stored.corpus.corpus_id,
        "surface": stored.surface,
        "goal_id": stored.goal.goal_id,
        "agent_id": stored.agent.agent_id,
        "decision": decision,
        "status": status,
        "reasons": sorted(set(reasons)),
        "memory_ref_digests": ref_digests,
        "reasoning_summary": reasoning,
        "artifact_verification": artifact,
        "authority_scope_check": {
            "corpus_id": stored.corpus.corpus_id,
            "surface": stored.surface,
            "recall_status": stored.status,
            "attributed": attributed,
        },
        "original_output_kept": status != "applied",
        "user_gate": False,
        "recorded": False,
    }
    if not execute or shape:
        return receipt
    receipt["recorded"] = True
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
    return row.receipt
