"""Hybrid ranking in the local provider: the served top-k is exactly the brute-force
fused ranking, under the relevance floor; vectors are stored at write time."""

import json
from pathlib import Path

import pytest

from reward_memory.models import HYBRID, LocalProviderDocument
from reward_memory.providers import base, hybrid
from reward_memory.providers.local import LocalProvider, backfill_embeddings

SET = Path(__file__).resolve().parents[2] / "bench" / "relevance_real"
SURFACE = "issue_fix"
QUERIES = [
    "about to rename a public function in the SDK",
    "run the tests before committing",
    "never commit secrets or credentials",
    "documentation",
    "the",  # a stop word: no lexical evidence at all
    "commit changes tests code",  # matches far more documents than the first BM25 depth
    "how long to bake sourdough bread",
]


def _records(n: int) -> list[tuple[str, str]]:
    rows = [json.loads(line) for line in (SET / "records.jsonl").read_text().splitlines()]
    return [(r["id"], r["text"]) for r in rows[:n]]


@pytest.fixture
def corpus(db):
    provider = LocalProvider()
    binding = base.Binding(provider_id="local", scope_ref="test:hybrid")
    documents = _records(160)
    for ref, text in documents:
        provider.write(
            binding,
            base.ProviderWrite(
                resource_ref=ref, surface=SURFACE, content=text.encode(), search_text=text
            ),
        )
    return provider, binding, documents


def _rank(corpus, query, limit, ranking=HYBRID):
    provider, binding, _ = corpus
    return provider.rank(binding, surface=SURFACE, query=query, limit=limit, ranking=ranking)


@pytest.mark.parametrize("limit", [1, 3, 10])
def test_served_top_k_equals_the_brute_force_fusion(corpus, limit):
    documents = corpus[2]
    for query in QUERIES:
        assert _rank(corpus, query, limit) == hybrid.reference(documents, query, limit), query


def test_a_query_nothing_answers_gets_nothing(corpus):
    assert _rank(corpus, "how long to bake sourdough bread", 5) == []


def test_every_served_document_clears_the_floor(corpus):
    served = _rank(corpus, "commit changes tests code", 10)
    assert served  # the query is answered…
    full = hybrid.reference(corpus[2], "commit changes tests code", len(corpus[2]))
    assert served == full[:10]  # …and the floor cut the same documents as the reference


def test_lexical_stays_the_default(corpus):
    provider, binding, _ = corpus
    lexical = provider.rank(binding, surface=SURFACE, query="the tests", limit=5)
    assert lexical == _rank(corpus, "the tests", 5, ranking="lexical")


def test_vectors_are_stored_at_write_time(corpus):
    assert not LocalProviderDocument.objects.filter(embedding__isnull=True).exists()


def test_a_new_document_is_ranked_at_once(corpus):
    provider, binding, documents = corpus
    text = "Water the sourdough starter every morning before baking bread."
    provider.write(
        binding,
        base.ProviderWrite(
            resource_ref="bread", surface=SURFACE, content=text.encode(), search_text=text
        ),
    )
    assert _rank(corpus, "how long to bake sourdough bread", 3)[0] == "bread"
    assert _rank(corpus, "bake bread", 3) == hybrid.reference(
        [*documents, ("bread", text)], "bake bread", 3
    )


def test_backfill_fills_missing_vectors_once(corpus):
    refs = [ref for ref, _ in corpus[2][:2]]
    LocalProviderDocument.objects.filter(resource_ref__in=refs).update(embedding=None)
    assert backfill_embeddings() == 2
    assert backfill_embeddings() == 0
    assert _rank(corpus, "documentation", 10) == hybrid.reference(corpus[2], "documentation", 10)


def test_a_retired_document_leaves_the_hybrid_ranking_at_once(corpus):
    provider, binding, documents = corpus
    first = _rank(corpus, "never commit secrets or credentials", 3)
    assert first
    provider.retire(binding, first[0])
    after = _rank(corpus, "never commit secrets or credentials", 3)
    assert first[0] not in after
    remaining = [(ref, text) for ref, text in documents if ref != first[0]]
    assert after == hybrid.reference(remaining, "never commit secrets or credentials", 3)
