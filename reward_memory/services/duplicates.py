"""Duplicates caught at review: does a candidate say what an active record already says?

A candidate is compared with the live (active, unexpired) records of the *same corpus*
and the same scope (project and surface) only — never across corpora or Goals, so no
other scope's text is read. Two texts match when either

- their normalised tokens (NFKC, case-folded, words only) are identical or their token
  Jaccard reaches ``REWARD_MEMORY_DUPLICATE_JACCARD`` (0.80): restatements are always
  caught, whatever the embeddings say; or
- the cosine of their WordLlama unit vectors (``loopx_site.engines.embeddings``) reaches
  ``REWARD_MEMORY_DUPLICATE_THRESHOLD`` (0.90: no false merge on real near-duplicate
  instruction pairs, where 0.85 merged a quarter of the distinct ones).

A match only *marks* the candidate (``duplicate_of``); the reviewer decides, and may
say the candidate is distinct. Reads only.
"""

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from reward_memory import selectors
from reward_memory.models import Corpus, MemoryRecord

_WORD = re.compile(r"\w+")
IDENTICAL = "identical_text"
LEXICAL = "token_jaccard"
EMBEDDING = "embedding_cosine"


@dataclass(frozen=True)
class Match:
    record: MemoryRecord
    similarity: float  # the embedding cosine (1.0 for identical text)
    jaccard: float
    method: str  # identical_text | token_jaccard | embedding_cosine

    def payload(self, candidate_summary: str) -> dict[str, Any]:
        """The side-by-side view a reviewer reads (same corpus: the reviewer may read it)."""
        return {
            "record_ref": self.record.record_ref,
            "similarity": round(self.similarity, 4),
            "token_jaccard": round(self.jaccard, 4),
            "method": self.method,
            "threshold": threshold(),
            "record_summary": self.record.summary,
            "candidate_summary": candidate_summary,
        }


def threshold() -> float:
    return float(getattr(settings, "REWARD_MEMORY_DUPLICATE_THRESHOLD", 0.90))


def jaccard_threshold() -> float:
    return float(getattr(settings, "REWARD_MEMORY_DUPLICATE_JACCARD", 0.80))


def tokens(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(unicodedata.normalize("NFKC", text or "").casefold()))


def token_jaccard(left: frozenset[str], right: frozenset[str]) -> float:
    union = left | right
    return len(left & right) / len(union) if union else 0.0


def _cosines(summary: str, texts: list[str]) -> list[float]:
    from loopx_site.engines import embeddings

    matrix = embeddings.embed([summary, *texts])
    return [float(value) for value in matrix[1:] @ matrix[0]]


def find_duplicate(
    *, corpus: Corpus, candidate: dict[str, Any] | None, candidate_ref: str
) -> Match | None:
    """The live record of ``corpus`` (same project and surface) that ``candidate`` most
    closely restates, or ``None``. The candidate's own record is not its duplicate, nor
    the record of the prior candidate it revises (an edit replaces that record)."""
    if not isinstance(candidate, dict):
        return None
    summary = candidate.get("content_summary")
    scope = candidate.get("scope") or {}
    if not isinstance(summary, str) or not summary.strip():
        return None
    rows = list(
        selectors.live_records(corpus)
        .filter(project=scope.get("project") or "", surface=scope.get("surface") or "")
        .exclude(candidate_ref=candidate_ref)
        .exclude(candidate_ref=(candidate.get("lineage") or {}).get("prior_candidate_ref") or "")
        .order_by("created_at", "pk")
    )
    if not rows:
        return None
    mine = tokens(summary)
    cosines = _cosines(summary, [row.summary for row in rows])
    best = None
    for row, cosine in zip(rows, cosines, strict=True):
        theirs = tokens(row.summary)
        overlap = token_jaccard(mine, theirs)
        if mine and mine == theirs:
            method, cosine = IDENTICAL, 1.0
        elif overlap >= jaccard_threshold():
            method = LEXICAL
        elif cosine >= threshold():
            method = EMBEDDING
        else:
            continue
        match = Match(record=row, similarity=min(cosine, 1.0), jaccard=overlap, method=method)
        if best is None or (match.similarity, match.jaccard) > (best.similarity, best.jaccard):
            best = match
    return best
