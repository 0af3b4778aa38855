"""Exact BM25 full-text search per namespace, stored in the database (see README.md).

The public API: ``index``/``index_many``/``remove`` write, ``search`` ranks, ``count``
and ``rebuild`` maintain; ``bm25`` is the reference definition of the ranking.
"""

from loopx_site.engines.fulltext import bm25
from loopx_site.engines.fulltext.engine import (
    MAX_QUERY_TOKENS,
    Hit,
    count,
    index,
    index_many,
    rebuild,
    remove,
    search,
    tokens,
)

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
