"""Ranking documents: ``reward_memory_corpus_ranking_v0`` (a corpus's ranking setting,
previewed or changed) and ``reward_memory_relevance_eval_v0`` (``relevance-eval``)."""

from typing import Any

CORPUS_RANKING_SCHEMA = "reward_memory_corpus_ranking_v0"
RELEVANCE_EVAL_SCHEMA = "reward_memory_relevance_eval_v0"

#: How ``relevance-eval`` ranks: the production calls, named.
RANKING_PATH = "LocalProvider.write + LocalProvider.rank"


def corpus_ranking(change) -> dict[str, Any]:
    """``change``: a ``services.ranking.RankingChange``."""
    return {
        "schema_version": CORPUS_RANKING_SCHEMA,
        "corpus_id": change.corpus_id,
        "executed": change.executed,
        "ranking_before": change.before,
        "ranking": change.after,
        "requested": change.requested,
        "revision": change.revision,
    }


def relevance_eval(evaluation) -> dict[str, Any]:
    """``evaluation``: a ``services.relevance.Evaluation``. ``rankings`` holds each
    query's record ids (empty when nothing cleared the floor)."""
    return {
        "schema_version": RELEVANCE_EVAL_SCHEMA,
        "ranking": {"provider": "local", "mode": evaluation.ranking, "path": RANKING_PATH},
        "records": evaluation.records,
        "queries": evaluation.queries,
        "limit": evaluation.limit,
        "rankings": evaluation.rankings,
        "metrics": evaluation.metrics,
        "metrics_by_kind": evaluation.metrics_by_kind,
        "first_relevant_rank": evaluation.first_relevant_rank,
    }
