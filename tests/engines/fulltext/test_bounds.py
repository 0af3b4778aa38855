"""Recall ranking is exact at any size: the kernel's full-text search returns the same
top-k as the reference BM25 (``loopx_site.engines.fulltext.bm25``) over the namespace, including the
two cases the former bounded path lost (common-token-only matches, old matches)."""

import random

import pytest

import loopx_site.engines.fulltext as ft
from loopx_site.engines.fulltext import bm25
from loopx_site.engines.fulltext import engine as fulltext


def _load(namespace: str, docs: list[tuple[str, str]]) -> None:
    fulltext.index_many(namespace, docs)


def _refs(hits) -> list[str]:
    return [h.ref for h in hits]


@pytest.mark.django_db
def test_record_sharing_only_common_tokens_with_the_query_is_still_found():
    # "review" and "patch" occur in almost every document; the relevant record holds
    # them three times in a short body, so exact BM25 ranks it first.
    filler = [
        (f"common-{i:04d}", f"review the patch number{i} for module{i % 37} and its tests")
        for i in range(1500)
    ]
    relevant = ("relevant", "review patch review patch review patch")
    _load("ns", [*filler[:700], relevant, *filler[700:]])
    _load("other", [("elsewhere", "review patch " * 20)])

    hits = ft.search("ns", "review patch", limit=4)

    expected = bm25.rank([*filler, relevant], "review patch", 4)
    assert _refs(hits) == [ref for ref, _ in expected]
    assert hits[0].ref == "relevant"


@pytest.mark.django_db
def test_record_older_than_the_newest_thousand_matches_is_still_found():
    oldest = ("aa-oldest", "flaky retry timeout in the release branch")
    newer = [(f"new-{i:05d}", f"release branch merge note {i}") for i in range(1200)]
    _load("ns", [oldest])
    _load("ns", newer)

    hits = ft.search("ns", "flaky retry release", limit=3)

    assert hits[0].ref == "aa-oldest"
    assert _refs(hits) == [ref for ref, _ in bm25.rank([oldest, *newer], "flaky retry release", 3)]


@pytest.mark.django_db
def test_statistics_are_the_namespace_own_not_the_whole_index():
    # In "ns", "alpha" is rare and "beta" common; in "other" it is the reverse. With
    # whole-index statistics the other namespace would change the ranking of "ns".
    ns_docs = [("a", "alpha gamma"), ("b", "beta gamma")] + [
        (f"beta-{i}", "beta filler") for i in range(30)
    ]
    other_docs = [(f"alpha-{i}", "alpha filler") for i in range(300)]
    _load("ns", ns_docs)
    _load("other", other_docs)

    hits = ft.search("ns", "alpha beta", limit=2)

    assert _refs(hits) == [ref for ref, _ in bm25.rank(ns_docs, "alpha beta", 2)]
    assert hits[0].ref == "a"
    assert hits[0].score == pytest.approx(bm25.rank(ns_docs, "alpha beta", 1)[0][1], rel=0, abs=0)


@pytest.mark.django_db
def test_ties_are_broken_by_ref_ascending():
    docs = [(f"r{i:03d}", "same words here") for i in (5, 3, 9, 1, 7)]
    _load("ns", docs)
    assert _refs(ft.search("ns", "words", limit=3)) == ["r001", "r003", "r005"]


VOCAB = [f"w{i}" for i in range(40)]


def _random_corpus(rng: random.Random, size: int) -> list[tuple[str, str]]:
    weights = [1.0 / (r + 1) for r in range(len(VOCAB))]
    return [
        (
            f"ref-{rng.randrange(10**6):06d}-{i}",
            " ".join(rng.choices(VOCAB, weights, k=rng.randint(0, 12))),
        )
        for i in range(size)
    ]


@pytest.mark.django_db
@pytest.mark.parametrize("bucket", [7, 2048])  # many posting blocks per term, or one
@pytest.mark.parametrize("seed", range(4))
def test_top_k_equals_the_reference_on_random_corpora_after_updates_and_removals(
    seed, bucket, monkeypatch
):
    monkeypatch.setattr(fulltext, "BUCKET", bucket)
    rng = random.Random(seed)
    docs = dict(_random_corpus(rng, rng.randint(20, 400)))
    _load("ns", list(docs.items()))
    _load("noise", _random_corpus(random.Random(seed + 100), 200))
    for ref in rng.sample(sorted(docs), k=len(docs) // 5):  # rewrite some bodies
        body = " ".join(rng.choices(VOCAB, k=rng.randint(0, 9)))
        fulltext.index("ns", ref, body)
        docs[ref] = body
    for ref in rng.sample(sorted(docs), k=len(docs) // 6):  # and remove some
        fulltext.remove("ns", ref)
        del docs[ref]

    for _ in range(25):
        query = " ".join(rng.choices(VOCAB, k=rng.randint(1, 6)))
        limit = rng.choice([1, 4, 10, 50])
        expected = bm25.rank(list(docs.items()), query, limit)
        hits = ft.search("ns", query, limit=limit)
        assert [(h.ref, h.score) for h in hits] == expected, query
