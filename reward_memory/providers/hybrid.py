"""Hybrid ranking for the ``local`` provider: the exact BM25 fused with dense cosine
similarity, under a relevance floor.

A document's fused score is ``ALPHA · cosine + (1 − ALPHA) · min(bm25 / LEXICAL_SCALE, 1)``
(cosine of the query's and the document's embeddings, ``loopx_site.engines.embeddings``;
BM25 as ``fulltext.search`` scores it). A document scoring below ``FLOOR`` is never
returned, and a query no document of the namespace comes near (its best cosine is below
``GATE``) gets no refs at all, whatever words it shares with them. The constants were
chosen on the tuning half of ``bench/relevance_real`` (never on its held-out half).

Exactness: ``rank`` returns exactly the top ``limit`` of that score over every
recallable document of the namespace (ties by ref) — what ``reference`` computes by
brute force. The cosine is computed for every document (one matrix product over the
namespace's stored vectors, cached per process and reloaded whenever the namespace's
documents change); BM25 is read ``depth`` deep: a document outside the BM25 top
``depth`` scores at most the ``depth``-th BM25 score, so its fused score has a ceiling;
when every document picked by ceiling is one whose BM25 is known, the pick is exact,
else ``depth`` grows and the step repeats.
"""

import uuid
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
from django.db import connection

from loopx_site.engines import embeddings, fulltext
from loopx_site.engines.fulltext import bm25
from reward_memory.models import LocalProviderDocument, LocalProviderNamespace

ALPHA = 0.7
LEXICAL_SCALE = 12.0
FLOOR = 0.25
GATE = 0.28
_FIRST_DEPTH = 32
_GROWTH = 4
_CACHED_NAMESPACES = 16


def fuse(cosines: np.ndarray, lexical: np.ndarray) -> np.ndarray:
    """Fused scores of documents with these cosines and BM25 scores."""
    return ALPHA * cosines + (1.0 - ALPHA) * np.minimum(lexical / LEXICAL_SCALE, 1.0)


def pick(refs: list[str], scores: np.ndarray, limit: int) -> list[int]:
    """Indexes of the best ``limit`` scores at or above ``FLOOR``, best first (ties by
    ref)."""
    kept = np.flatnonzero(scores >= FLOOR)
    if len(kept) > limit:
        kth = np.partition(scores[kept], len(kept) - limit)[len(kept) - limit]
        kept = kept[scores[kept] >= kth]
    return sorted(kept.tolist(), key=lambda i: (-scores[i], refs[i]))[:limit]


@dataclass(frozen=True)
class _Space:
    version: tuple | None
    refs: list[str]
    index: dict[str, int]
    matrix: np.ndarray


_spaces: "OrderedDict[tuple, _Space]" = OrderedDict()


def _sql() -> tuple[str, str]:
    qn = connection.ops.quote_name
    docs = qn(LocalProviderDocument._meta.db_table)
    where = "WHERE scope_key = %s AND surface = %s"
    version = f"SELECT generation, nonce FROM {qn(LocalProviderNamespace._meta.db_table)} {where}"  # noqa: S608 - quoted model name
    rows = (
        f"SELECT resource_ref, embedding FROM {docs} {where} AND recallable = %s "  # noqa: S608
        "ORDER BY resource_ref"
    )
    return version, rows


def bump(scope_key: str, surface: str) -> None:
    """Move the namespace's generation (inside the writer's transaction). The fresh
    nonce keeps a generation number that a rolled-back transaction once reached from
    ever naming another state."""
    table = connection.ops.quote_name(LocalProviderNamespace._meta.db_table)
    nonce = uuid.uuid4().hex
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (scope_key, surface, generation, nonce) "  # noqa: S608
            "VALUES (%s, %s, 1, %s) ON CONFLICT (scope_key, surface) DO UPDATE SET "
            f"generation = {table}.generation + 1, nonce = %s",
            [scope_key, surface, nonce, nonce],
        )


def space(scope_key: str, surface: str) -> _Space:
    """The namespace's recallable refs (sorted) and their vectors, cached per process
    under the namespace's generation (``LocalProviderNamespace``, moved by every write
    and retirement; one index lookup)."""
    key = (connection.alias, scope_key, surface)
    version_sql, rows_sql = _sql()
    with connection.cursor() as cursor:
        cursor.execute(version_sql, [scope_key, surface])
        row = cursor.fetchone()
        version = tuple(row) if row else None
        cached = _spaces.get(key)
        if cached is not None and cached.version == version:
            _spaces.move_to_end(key)
            return cached
        cursor.execute(rows_sql, [scope_key, surface, True])
        rows = cursor.fetchall()
    refs = [ref for ref, _ in rows]
    built = _Space(version, refs, {r: i for i, r in enumerate(refs)}, embeddings.stack(
        blob for _, blob in rows
    ))  # fmt: skip
    _spaces[key] = built
    while len(_spaces) > _CACHED_NAMESPACES:
        _spaces.popitem(last=False)
    return built


def rank(namespace: str, scope_key: str, surface: str, query: str, limit: int) -> list[str]:
    """The refs of the exact fused top ``limit`` above the floor, best first."""
    docs = space(scope_key, surface)
    if not docs.refs:
        return []
    cosines = embeddings.cosine(docs.matrix, embeddings.embed([query])[0])
    if cosines.max() < GATE:  # nothing in the namespace is about this
        return []
    size = len(docs.refs)
    depth = max(limit * _GROWTH, _FIRST_DEPTH)
    while True:
        hits = fulltext.search(namespace, query, limit=depth)
        lexical = np.zeros(size)
        listed = np.zeros(size, dtype=bool)
        for hit in hits:
            i = docs.index.get(hit.ref)
            if i is not None:
                lexical[i], listed[i] = hit.score, True
        exact = fuse(cosines, lexical)
        if len(hits) < depth:  # every match is listed: the scores are exact
            return [docs.refs[i] for i in pick(docs.refs, exact, limit)]
        ceiling = np.where(listed, exact, fuse(cosines, np.full(size, hits[-1].score)))
        chosen = pick(docs.refs, ceiling, limit)
        if all(listed[i] for i in chosen):
            return [docs.refs[i] for i in chosen]
        depth *= _GROWTH


def reference(documents: list[tuple[str, str]], query: str, limit: int) -> list[str]:
    """Brute force of the same ranking over ``(ref, text)``: every document's BM25 (the
    reference BM25) and cosine, fused, floored, sorted."""
    documents = sorted(documents)
    refs = [ref for ref, _ in documents]
    matrix = embeddings.stack(
        embeddings.to_bytes(embeddings.embed([text])[0]) for _, text in documents
    )
    scores = dict(bm25.Reference(documents).rank(query, len(documents)))
    lexical = np.array([scores.get(ref, 0.0) for ref in refs])
    cosines = embeddings.cosine(matrix, embeddings.embed([query])[0])
    if not refs or cosines.max() < GATE:
        return []
    return [refs[i] for i in pick(refs, fuse(cosines, lexical), limit)]
