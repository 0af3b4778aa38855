"""The shared full-text index: SQLite FTS5 on SQLite, PostgreSQL full-text search on
PostgreSQL, behind three calls.

Documents live in namespaces (e.g. one per corpus); a search never crosses namespaces.
Queries are natural-language text: they are tokenised (Unicode word characters,
lower-cased) and matched as an OR of tokens, ranked by BM25 (SQLite) or ``ts_rank_cd``
(PostgreSQL), best first, ties broken by ``ref``. Callers keep their own lifecycle
filters: remove a document when it stops being recallable.

Bounded work on large indexes (SQLite): a token matching more than ``POOL`` documents
of the index is *common*. When a query has selective tokens, only those are matched
(common tokens add little to BM25 and would make the cost linear in the namespace);
when every token is common, the newest ``POOL`` matching documents are ranked. Below
``POOL`` matches per token the ranking is exactly the plain OR query's.
"""

import hashlib
import re
from dataclasses import dataclass

from django.db import connection

from loopx_site.core import clock
from loopx_site.core.models import SearchDocument

MAX_QUERY_TOKENS = 32
POOL = 1000
_TOKEN = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Hit:
    ref: str
    score: float


def tokens(text: str) -> list[str]:
    """Distinct lower-cased word tokens of ``text``, in order, at most 32."""
    seen: dict[str, None] = {}
    for token in _TOKEN.findall(text.lower()):
        seen.setdefault(token, None)
        if len(seen) >= MAX_QUERY_TOKENS:
            break
    return list(seen)


def namespace_token(namespace: str) -> str:
    """A single FTS token standing for a namespace (namespaces may hold punctuation)."""
    return "ns" + hashlib.sha256(namespace.encode("utf-8")).hexdigest()[:24]


def index(namespace: str, ref: str, body: str) -> None:
    """Insert or replace one document (idempotent)."""
    SearchDocument.objects.update_or_create(
        namespace=namespace,
        ref=ref,
        defaults={
            "namespace_key": namespace_token(namespace),
            "body": body,
            "updated_at": clock.now(),
        },
    )


def remove(namespace: str, ref: str) -> None:
    SearchDocument.objects.filter(namespace=namespace, ref=ref).delete()


def count(namespace: str) -> int:
    return SearchDocument.objects.filter(namespace=namespace).count()


def search(namespace: str, query: str, *, limit: int = 10) -> list[Hit]:
    """Ranked hits for ``query`` in ``namespace`` (empty when the query has no tokens)."""
    words = tokens(query)
    if not words or limit <= 0:
        return []
    if connection.vendor == "postgresql":
        sql = (
            "SELECT d.ref, ts_rank_cd(to_tsvector('simple', d.body), q) AS score "
            "FROM core_searchdocument d, to_tsquery('simple', %s) q "
            "WHERE d.namespace = %s AND to_tsvector('simple', d.body) @@ q "
            "ORDER BY score DESC, d.ref LIMIT %s"
        )
        params = [" | ".join(words), namespace, limit]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return [Hit(ref=r, score=float(s)) for r, s in cursor.fetchall()]
    return _search_sqlite(namespace_token(namespace), words, limit)


_COUNT_SQL = (
    "SELECT count(*) FROM (SELECT 1 FROM core_searchdocument_fts "
    "WHERE core_searchdocument_fts MATCH %s LIMIT %s)"
)
_BOUND_SQL = (
    "SELECT core_searchdocument_fts.rowid FROM core_searchdocument_fts "
    "JOIN core_searchdocument d ON d.id = core_searchdocument_fts.rowid "
    "WHERE core_searchdocument_fts MATCH %s AND d.namespace_key = %s "
    "ORDER BY core_searchdocument_fts.rowid DESC LIMIT 1 OFFSET %s"
)
_RANK_SQL = (
    "SELECT d.ref, -bm25(core_searchdocument_fts, 0.0, 1.0) AS score "
    "FROM core_searchdocument_fts JOIN core_searchdocument d "
    "ON d.id = core_searchdocument_fts.rowid "
    "WHERE core_searchdocument_fts MATCH %s AND d.namespace_key = %s "
    "AND core_searchdocument_fts.rowid >= %s ORDER BY score DESC, d.ref LIMIT %s"
)


def _body_query(words: list[str]) -> str:
    return "body:(" + " OR ".join('"' + w.replace('"', '""') + '"' for w in words) + ")"


def _search_sqlite(ns_key: str, words: list[str], limit: int) -> list[Hit]:
    # No atomic block: on SQLite (IMMEDIATE mode) it would take the write lock for a read.
    with connection.cursor() as cursor:
        selective, common = [], []
        for word in words:  # counts at most POOL + 1 matches per token (whole index)
            cursor.execute(_COUNT_SQL, [_body_query([word]), POOL + 1])
            matches = cursor.fetchone()[0]
            if matches > POOL:
                common.append(word)
            elif matches:
                selective.append(word)
        if not (selective or common):
            return []
        match = _body_query(selective or common)
        lowest = 0
        if not selective:  # every token is common: rank the newest POOL matches
            cursor.execute(_BOUND_SQL, [match, ns_key, POOL - 1])
            row = cursor.fetchone()
            lowest = row[0] if row is not None else 0
        cursor.execute(_RANK_SQL, [match, ns_key, lowest, limit])
        return [Hit(ref=r, score=float(s)) for r, s in cursor.fetchall()]
