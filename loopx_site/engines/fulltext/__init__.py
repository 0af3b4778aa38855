"""Exact BM25 full-text search per namespace, stored in the database (see README.md).

The public API: ``index``/``index_many``/``remove`` write, ``search`` ranks, ``count``
and ``rebuild`` maintain; ``bm25`` is the reference definition of the ranking.
"""

from loopx_site.engines.fulltext import bm25, derived, engine
from loopx_site.engines.fulltext.engine import (
    MAX_QUERY_TOKENS,
    Hit,
    count,
    index,
    index_many,
    rebuild,
    remove,
    tokens,
)


def search(namespace: str, query: str, *, limit: int = 10) -> list[Hit]:
    """Exact BM25 top-``limit`` hits for ``query`` in ``namespace``, best first: from the
    process's copy of the posting lists when it holds the namespace's current revision
    (``derived``), else from the database (``engine.search_words``)."""
    words = tokens(query)
    if not words or limit <= 0:
        return []
    hits = derived.search(namespace, words, limit)
    if hits is not None:
        return hits
    return engine.search_words(namespace, words, limit)


__all__ = [
    "MAX_QUERY_TOKENS",
    "Hit",
    "bm25",
    "count",
    "index",
    "index_many",
    "rebuild",
    "remove",
    "search",
    "tokens",
]
