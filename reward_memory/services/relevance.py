"""``reward_memory relevance-eval``: how well recall ranks a set of records for a set of
queries, measured through the production ranking path.

The records go into a throwaway corpus: a fresh provider binding of the built-in
``local`` provider (its own full-text namespace, written with ``LocalProvider.write``
exactly as activation writes a record's summary), inside one database transaction that
is always rolled back. Nothing outside that transaction sees the records, no real
corpus's namespace or statistics are touched, and nothing is left afterwards — on
SQLite and PostgreSQL alike. Each query is ranked with ``LocalProvider.rank``, the call
a recall makes.

Metrics (only over queries that carry ``relevant``): top-1 and top-3 hit rates, MRR@10
and nDCG@10 (binary gains) over the queries with relevant records, and, over the
queries whose ``relevant`` is empty (no-answer queries), the share answered with
nothing. An optional ``kind`` on a query groups the same metrics by kind.
"""

import json
import math
import uuid
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from loopx_site.core import progress
from reward_memory import providers
from reward_memory.errors import RewardMemoryError
from reward_memory.models import LEXICAL, RANKINGS
from reward_memory.providers import base

SURFACE = "relevance_eval"
DEPTH = 10  # MRR@10 and nDCG@10 look this deep, whatever --limit prints
MAX_LIMIT = 100
MAX_ID = 200
MAX_TEXT = 20_000


@dataclass(frozen=True)
class Query:
    query_id: str
    text: str
    relevant: tuple[str, ...] | None  # None: not judged
    kind: str | None


def _bad(option: str, line: int | None, message: str) -> RewardMemoryError:
    where = f"--{option} line {line}: " if line is not None else f"--{option}: "
    return RewardMemoryError("invalid_input_file", where + message, field=option)


def _lines(text: str, option: str):
    """``(line number, object)`` of each non-blank JSONL line."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            raise _bad(option, number, "not a JSON object.") from None
        if not isinstance(value, dict):
            raise _bad(option, number, "not a JSON object.")
        yield number, value


def _text_field(value: dict, key: str, option: str, number: int, cap: int) -> str:
    field = value.get(key)
    if not isinstance(field, str) or not field.strip():
        raise _bad(option, number, f'"{key}" must be a non-empty string.')
    if len(field) > cap:
        raise _bad(option, number, f'"{key}" is longer than {cap} characters.')
    return field


def parse_records(text: str) -> dict[str, str]:
    """``id → text`` of JSONL records ``{"id", "text"}`` (ids unique, at least one)."""
    records: dict[str, str] = {}
    for number, value in _lines(text, "records"):
        record_id = _text_field(value, "id", "records", number, MAX_ID)
        if record_id in records:
            raise _bad("records", number, f'the id "{record_id}" is repeated.')
        records[record_id] = _text_field(value, "text", "records", number, MAX_TEXT)
    if not records:
        raise _bad("records", None, "holds no record.")
    return records


def parse_queries(text: str, records: dict[str, str]) -> list[Query]:
    """JSONL queries ``{"id", "query", "relevant"?: [record ids], "kind"?}``; every
    relevant id must name a record."""
    queries: list[Query] = []
    seen: set[str] = set()
    for number, value in _lines(text, "queries"):
        query_id = _text_field(value, "id", "queries", number, MAX_ID)
        if query_id in seen:
            raise _bad("queries", number, f'the id "{query_id}" is repeated.')
        seen.add(query_id)
        query = _text_field(value, "query", "queries", number, MAX_TEXT)
        relevant = value.get("relevant")
        if relevant is not None:
            if not isinstance(relevant, list) or not all(isinstance(r, str) for r in relevant):
                raise _bad("queries", number, '"relevant" must be a list of record ids.')
            unknown = [r for r in relevant if r not in records]
            if unknown:
                raise _bad("queries", number, f'"relevant" names an unknown record "{unknown[0]}".')
            relevant = tuple(dict.fromkeys(relevant))
        kind = value.get("kind")
        if kind is not None and (not isinstance(kind, str) or not kind or len(kind) > MAX_ID):
            raise _bad("queries", number, '"kind" must be a short string.')
        queries.append(Query(query_id, query, relevant, kind))
    if not queries:
        raise _bad("queries", None, "holds no query.")
    return queries


def rank_in_throwaway_corpus(
    records: dict[str, str], queries: list[Query], *, depth: int, ranking: str = LEXICAL
) -> dict[str, list[str]]:
    """Each query's ranked record ids (at most ``depth``), from a throwaway ``local``
    corpus that is rolled back before this returns."""
    provider = providers.get("local")
    binding = base.Binding(provider_id="local", scope_ref=f"relevance-eval:{uuid.uuid4().hex}")
    try:
        return _rank(provider, binding, records, queries, depth=depth, ranking=ranking)
    except providers.ProviderUnavailable:
        raise RewardMemoryError(
            "store_unavailable", "The local provider's tables cannot be written (migrated?)."
        ) from None


def _rank(provider, binding, records, queries, *, depth: int, ranking: str):
    rankings: dict[str, list[str]] = {}
    with transaction.atomic():
        try:
            for record_id, text in progress.track(records.items(), desc="indexing", unit="record"):
                provider.write(
                    binding,
                    base.ProviderWrite(
                        resource_ref=record_id,
                        surface=SURFACE,
                        content=text.encode("utf-8"),
                        search_text=text,
                    ),
                )
            for query in progress.track(queries, desc="ranking", unit="ranking"):
                rankings[query.query_id] = provider.rank(
                    binding, surface=SURFACE, query=query.text, limit=depth, ranking=ranking
                )
        finally:
            transaction.set_rollback(True)  # the throwaway corpus never outlives the run
    return rankings


def _dcg(flags: list[bool]) -> float:
    return sum(1.0 / math.log2(i + 2) for i, hit in enumerate(flags) if hit)


def _scores(ranked: list[str], relevant: tuple[str, ...]) -> dict[str, float]:
    wanted = set(relevant)
    flags = [ref in wanted for ref in ranked[:DEPTH]]
    first = next((i + 1 for i, hit in enumerate(flags) if hit), None)
    ideal = _dcg([True] * min(len(wanted), DEPTH))
    return {
        "top1": float(first == 1),
        "top3": float(first is not None and first <= 3),
        "mrr_at_10": 1.0 / first if first else 0.0,
        "ndcg_at_10": _dcg(flags) / ideal,
    }


def _summary(queries: list[Query], rankings: dict[str, list[str]]) -> dict[str, Any]:
    answerable = [q for q in queries if q.relevant]
    negatives = [q for q in queries if q.relevant is not None and not q.relevant]
    out: dict[str, Any] = {"judged": len(answerable), "no_answer_queries": len(negatives)}
    if answerable:
        rows = [_scores(rankings[q.query_id], q.relevant) for q in answerable]
        for key in ("top1", "top3", "mrr_at_10", "ndcg_at_10"):
            out[key] = round(sum(r[key] for r in rows) / len(rows), 4)
    if negatives:
        silent = sum(1 for q in negatives if not rankings[q.query_id])
        out["no_answer_answered_with_nothing"] = silent
        out["no_answer_share_answered_with_nothing"] = round(silent / len(negatives), 4)
    return out


@dataclass(frozen=True)
class Evaluation:
    """One relevance evaluation: each query's ranked record ids and, where judged, the
    metrics overall and per query ``kind``."""

    ranking: str
    records: int
    queries: int
    limit: int
    rankings: dict[str, list[str]]
    metrics: dict[str, Any] | None
    metrics_by_kind: dict[str, dict[str, Any]]
    first_relevant_rank: dict[str, int | None]


def evaluate(
    *, records: dict[str, str], queries: list[Query], limit: int = 10, ranking: str = LEXICAL
) -> "Evaluation":
    """How ``records`` rank for ``queries`` as a corpus with this ``ranking`` (``lexical``
    or ``hybrid``) ranks them (``documents.relevance.relevance_eval`` renders it)."""
    if not 1 <= limit <= MAX_LIMIT:
        raise RewardMemoryError(
            "invalid_argument", f"--limit must be between 1 and {MAX_LIMIT}.", field="limit"
        )
    if ranking not in RANKINGS:
        raise RewardMemoryError(
            "invalid_argument", f"--ranking must be one of {', '.join(RANKINGS)}.", field="ranking"
        )
    ranked = rank_in_throwaway_corpus(records, queries, depth=max(limit, DEPTH), ranking=ranking)
    judged = [q for q in queries if q.relevant is not None]
    kinds = sorted({q.kind for q in judged if q.kind})
    misses = {
        q.query_id: next((i + 1 for i, r in enumerate(ranked[q.query_id]) if r in q.relevant), None)
        for q in judged
        if q.relevant
    }
    return Evaluation(
        ranking=ranking,
        records=len(records),
        queries=len(queries),
        limit=limit,
        rankings={q.query_id: ranked[q.query_id][:limit] for q in queries},
        metrics=_summary(judged, ranked) if judged else None,
        metrics_by_kind={
            kind: _summary([q for q in judged if q.kind == kind], ranked) for kind in kinds
        },
        first_relevant_rank=misses,
    )
