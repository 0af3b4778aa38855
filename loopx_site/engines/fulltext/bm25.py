"""The ranking the full-text index must reproduce: Okapi BM25 over one namespace.

This module is the single definition of the ranking. ``loopx_site.engines.fulltext`` computes
the same numbers with the same operations in the same order (vectorised), and the tests
compare its top-k against :func:`rank` below on random and adversarial corpora.

Tokenisation (the English analyzer, ``ENGLISH``; the same for documents and queries)
    ``text.lower()``, then every maximal run of Unicode word characters (``\\w+``), each
    cut to its first ``MAX_TOKEN_CHARS`` characters; English stop words (``STOP_WORDS``:
    articles, pronouns, auxiliaries, prepositions — never the negations ``no``, ``not``,
    ``nor``, ``never``) are dropped; every other token is reduced to its Snowball English
    stem (PyStemmer), so "descriptions", "description" and "described" meet. A document's
    length ``dl`` is its number of kept tokens (repeats counted); ``tf`` is how often a
    stem occurs in it. A query is its *distinct* stems in order of first appearance, at
    most ``MAX_QUERY_TOKENS`` of them. ``PLAIN`` (no stop words, no stemming) is the
    analyzer before stemming, kept for the relevance comparison in ``bench/``.

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
from dataclasses import dataclass
from functools import lru_cache

import Stemmer

K1 = 1.2
B = 0.75
ONE_MINUS_B = 1.0 - B
K1_PLUS_1 = K1 + 1.0
MAX_QUERY_TOKENS = 32
MAX_TOKEN_CHARS = 64
_TOKEN = re.compile(r"\w+", re.UNICODE)


#: Function words that carry no topic: dropped from documents and queries alike. The
#: negations stay (an owner's "never" and "not" are the point of an instruction), and so
#: do words of quantity and modality a person searches by ("only", "must", "long").
STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each for from
    further had has have having he her here hers herself him himself his how i if in into
    is it its itself just me my myself of off on once or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where
    which while who whom why will with would you your yours yourself yourselves
    s t d ll m re ve
    """.split()  # noqa: SIM905 - a word list reads better as prose
)

_stemmer = Stemmer.Stemmer("english")


@lru_cache(maxsize=65536)
def stem(token: str) -> str:
    """The Snowball English stem of one lower-cased token."""
    return _stemmer.stemWord(token)


@dataclass(frozen=True)
class Analyzer:
    """Text → tokens. ``ENGLISH`` is the index's analyzer; ``PLAIN`` the one before."""

    stop_words: frozenset = frozenset()
    stemming: bool = False

    def _terms(self, text: str):
        stop = self.stop_words
        for raw in _TOKEN.findall(text.lower()):
            token = raw[:MAX_TOKEN_CHARS]
            if token in stop:
                continue
            yield stem(token) if self.stemming else token

    def document_tokens(self, text: str) -> list[str]:
        """Every kept token of a document, repeats included, in order (``_terms``, as
        list comprehensions: indexing analyses every document)."""
        stop, cut = self.stop_words, MAX_TOKEN_CHARS
        kept = [token for raw in _TOKEN.findall(text.lower()) if (token := raw[:cut]) not in stop]
        if self.stemming:
            return [stem(token) for token in kept]
        return kept

    def query_tokens(self, text: str) -> list[str]:
        """Distinct kept tokens of a query, in order of first appearance, at most 32."""
        return list(dict.fromkeys(self.document_tokens(text)))[:MAX_QUERY_TOKENS]


PLAIN = Analyzer()
ENGLISH = Analyzer(stop_words=STOP_WORDS, stemming=True)


def document_tokens(text: str) -> list[str]:
    """Every token of a document (``ENGLISH``), repeats included, in order."""
    return ENGLISH.document_tokens(text)


def query_tokens(text: str) -> list[str]:
    """Distinct tokens of a query (``ENGLISH``), in order of first appearance, at most 32."""
    return ENGLISH.query_tokens(text)


def idf(documents: int, df: int) -> float:
    return math.log(1.0 + (documents - df + 0.5) / (df + 0.5))


def weight(tf: float, dl: float, avgdl: float) -> float:
    """The term-frequency part of one term's score (same operation order as fulltext)."""
    return tf * K1_PLUS_1 / (tf + K1 * (ONE_MINUS_B + B * dl / avgdl))


class Reference:
    """The reference ranking over a fixed set of ``(ref, body)`` pairs (tokenised once, so
    benchmarks can ask it many queries)."""

    def __init__(self, documents: Iterable[tuple[str, str]], analyzer: Analyzer = ENGLISH):
        self.analyzer = analyzer
        self.refs: list[str] = []
        self.lengths: list[int] = []
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for ref, body in documents:
            words = analyzer.document_tokens(body)
            doc = len(self.refs)
            self.refs.append(ref)
            self.lengths.append(len(words))
            for term, tf in Counter(words).items():
                self.postings.setdefault(term, []).append((doc, tf))
        self.avgdl = sum(self.lengths) / len(self.refs) if self.refs else 0.0

    def rank(self, query: str, limit: int) -> list[tuple[str, float]]:
        """Exact top-``limit`` ``(ref, score)`` pairs, best first, ties by ref."""
        words = self.analyzer.query_tokens(query)
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
