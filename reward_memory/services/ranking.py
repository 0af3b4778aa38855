"""A corpus's ranking setting: ``lexical`` (the exact BM25) or ``hybrid`` (BM25 fused
with dense embeddings under a relevance floor, ``reward_memory.providers.hybrid``).

Only the corpus's declared owner changes it; a preview (the default) says what would
change. The revision moves, so recall requests built against the old setting are
refused as stale.
"""

from dataclasses import dataclass

from django.db import transaction
from django.db.models import F

from loopx_site.core import clock
from reward_memory import contracts as c
from reward_memory import selectors
from reward_memory.errors import RewardMemoryError
from reward_memory.models import RANKINGS, Corpus, LocalProviderDocument
from reward_memory.principals import Principal
from reward_memory.services import roles


@dataclass(frozen=True)
class RankingChange:
    """A corpus's ranking setting before and after ``set_corpus_ranking``."""

    corpus_id: str
    executed: bool
    before: str
    after: str
    requested: str
    revision: int


def set_corpus_ranking(
    *, corpus_id: str, ranking: str, principal: Principal, execute: bool = False
) -> RankingChange:
    if ranking not in RANKINGS:
        raise RewardMemoryError(
            "invalid_argument", f"ranking must be one of {', '.join(RANKINGS)}.", field="ranking"
        )
    corpus = selectors.get_corpus(corpus_id)
    if not roles.acts_as(principal, corpus, c.OWNER_ROLE):
        raise RewardMemoryError(
            "owner_not_authorized", "Only the corpus owner sets its ranking.", field="actor"
        )
    before = corpus.ranking
    if execute and before != ranking:
        with transaction.atomic():
            Corpus.objects.filter(pk=corpus.pk).update(
                ranking=ranking, revision=F("revision") + 1, updated_at=clock.now()
            )
        corpus.refresh_from_db()
    return RankingChange(
        corpus_id=corpus.corpus_id,
        executed=bool(execute),
        before=before,
        after=ranking if execute else before,
        requested=ranking,
        revision=corpus.revision,
    )


@dataclass(frozen=True)
class EmbeddingBackfill:
    """What ``backfill_embeddings`` found (``missing``) and stored (``filled``)."""

    executed: bool
    missing: int
    filled: int


def backfill_embeddings(*, execute: bool = False, track=None) -> EmbeddingBackfill:
    """Store the dense vector of every local provider document written before hybrid
    ranking; a preview only counts them."""
    from reward_memory.providers import local

    missing = LocalProviderDocument.objects.filter(embedding__isnull=True).count()
    filled = local.backfill_embeddings(track=track) if execute else 0
    return EmbeddingBackfill(executed=bool(execute), missing=missing, filled=filled)
