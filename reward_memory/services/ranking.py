"""A corpus's ranking setting: ``lexical`` (the exact BM25) or ``hybrid`` (BM25 fused
with dense embeddings under a relevance floor, ``reward_memory.providers.hybrid``).

Only the corpus's declared owner changes it; a preview (the default) says what would
change. The revision moves, so recall requests built against the old setting are
refused as stale.
"""

from typing import Any

from django.db import transaction
from django.db.models import F

from loopx_site.core import clock
from reward_memory import contracts as c
from reward_memory import selectors
from reward_memory.errors import RewardMemoryError
from reward_memory.models import RANKINGS, Corpus
from reward_memory.principals import Principal

SCHEMA = "reward_memory_corpus_ranking_v0"


def set_corpus_ranking(
    *, corpus_id: str, ranking: str, principal: Principal, execute: bool = False
) -> dict[str, Any]:
    if ranking not in RANKINGS:
        raise RewardMemoryError(
            "invalid_argument", f"ranking must be one of {', '.join(RANKINGS)}.", field="ranking"
        )
    corpus = selectors.get_corpus(corpus_id)
    if not selectors.acts_as(principal, corpus, c.OWNER_ROLE):
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
    return {
        "schema_version": SCHEMA,
        "corpus_id": corpus.corpus_id,
        "executed": bool(execute),
        "ranking_before": before,
        "ranking": ranking if execute else before,
        "requested": ranking,
        "revision": corpus.revision,
    }
