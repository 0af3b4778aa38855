"""The ranking the full-text index must reproduce: Okapi BM25 over one namespace.

This module is the single definition of the ranking. ``loopx_site.core.fulltext`` computes
the same numbers with the same operations in the same order (vectorised), and the tests
compare its top-k against :func:`rank` below on random and adversarial corpora.

Tokenisation
    ``text.lower()``, then every maximal run of Unicode word characters (``\\w+``), each
    cut to its first ``MAX_TOKEN_CHARS`` characters. A document's length ``dl`` is its
    number of tokens (repeats counted); ``tf`` is how often a token occurs in it.
    A query is its *distinct* tokens in order of first appearance, at most
    ``MAX_QUERY_TOKENS`` of them.

Collection statistics (per namespace, never across namespaces)
    ``N`` documents, ``avgdl`` = (sum of their lengths) / ``N``, ``df(t)`` = number of
    documents of the namespace holding ``t``.

Score
    ``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))`` (always positive)
    ``w(t, d) = tf * (k1 + 1) / (tf + k1 * ((1 - b) + b * dl / avgdl))``
    ``score(d) = sum of idf(t) * w(t, d)`` over the query tokens ``d`` holds, added in
    query-token order, in IEEE double precision. ``k1 = 1.2``, ``b = 0.75``.

Order
    Documents holding at least one query token, by score descending, ties broken by
    ``ref`` ascending (code-point order). Top-k is the first ``k`` of that order.
"""

import math
import re
from collections import Counter
from collections.abc import Iterable

K1 = 1.2
B = 0.75
ONE_MINUS_B = 1.0 - B
K1_PLUS_1 = K1 + 1.0
MAX_QUERY_TOKENS = 32
MAX_TOKEN_CHARS = 64
_TOKEN = re.compile(r"\w+", re.UNICODE)


def document_tokens(text: str) -> list[str]:
    """Every token of a document, repeats included, in order."""
    return [t[:MAX_TOKEN_CHARS] for t in _TOKEN.findall(text.lower())]


def query_tokens(text: str) -> list[str]:
    """Distinct tokens of a query, in order of first appearance, at most 32."""
    seen: dict[str, None] = {}
    for token in _TOKEN.findall(text.lower()):
        seen.setdefault(token[:MAX_TOKEN_CHARS], None)
        if len(seen) >= MAX_QUERY_TOKENS:
            break
    return list(seen)


def idf(documents: int, df: int) -> float:
    return math.log(1.0 + (documents - df + 0.5) / (df + 0.5))


def weight(tf: float, dl: float, avgdl: float) -> float:
    """The term-frequency part of one term's score (same operation order as fulltext)."""
    return tf * K1_PLUS_1 / (tf + K1 * (ONE_MINUS_B + B * dl / avgdl))


class Reference:
    """The reference ranking over a fixed set of ``(ref, body)`` pairs (tokenised once, so
    benchmarks can ask it many queries)."""

    def __init__(self, documents: Iterable[tuple[str, str]]):
        self.refs: list[str] = []
        self.lengths: list[int] = []
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for ref, body in documents:
            words = document_tokens(body)
            doc = len(self.refs)
            self.refs.append(ref)
            self.lengths.append(len(words))
            for term, tf in Counter(words).items():
                self.postings.setdefault(term, []).append((doc, tf))
        self.avgdl = sum(self.lengths) / len(self.refs) if self.refs else 0.0

    def rank(self, query: str, limit: int) -> list[tuple[str, float]]:
        """Exact top-``limit`` ``(ref, score)`` pairs, best first, ties by ref."""
        words = query_tokens(query)
        if not self.refs or not words or limit <= 0:
            return []
        n = len(self.refs)
        scores: dict[int, float] = {}
        for word in words:  # per document, the terms are added in query order
            postings = self.postings.get(word, [])
            term_idf = idf(n, len(postings))
            for doc, tf in postings:
                contribution = term_idf * weight(float(tf), float(self.lengths[doc]), self.avgdl)
                scores[doc] = scores.get(doc, 0.0) + contribution
        ranked = sorted(((self.refs[d], s) for d, s in scores.items()), key=lambda x: (-x[1], x[0]))
        return ranked[:limit]


def rank(documents: Iterable[tuple[str, str]], query: str, limit: int) -> list[tuple[str, float]]:
    """Exact top-``limit`` ``(ref, score)`` of ``query`` over ``(ref, body)`` pairs."""
    return Reference(documents).rank(query, limit)
