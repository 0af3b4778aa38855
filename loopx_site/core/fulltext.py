"""The shared full-text index: SQLite FTS5 on SQLite, PostgreSQL full-text search on
PostgreSQL, behind three calls.

Documents live in namespaces (e.g. one per corpus); a search never crosses namespaces.
Queries are natural-language text: they are tokenised (Unicode word characters,
lower-cased) and matched as an OR of tokens, ranked by BM25 (SQLite) or ``ts_rank_cd``
(PostgreSQL), best first, ties broken by ``ref``. Callers keep their own lifecycle
filters: remove a document when it stops being recallable.
"""

import hashlib
import re
from dataclasses import dataclass

from django.db import connection

from loopx_site.core import clock
from loopx_site.core.models import SearchDocument

MAX_QUERY_TOKENS = 32
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
    else:
        ors = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        sql = (
            "SELECT d.ref, -bm25(core_searchdocument_fts, 0.0, 1.0) AS score "
            "FROM core_searchdocument_fts JOIN core_searchdocument d "
            "ON d.id = core_searchdocument_fts.rowid "
            "WHERE core_searchdocument_fts MATCH %s "
            "ORDER BY score DESC, d.ref LIMIT %s"
        )
        params = [f"namespace_key:{namespace_token(namespace)} AND body:({ors})", limit]
    # No atomic block: on SQLite (IMMEDIATE mode) it would take the write lock for a read.
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [Hit(ref=r, score=float(s)) for r, s in cursor.fetchall()]
