"""The English analyzer (stop words, Snowball stems) in the index, the query and the
reference ranking alike — and the relevance it buys on natural queries."""

import pytest

from bench.relevance_bench import evaluate, rate
from bench.relevance_set import RECORDS
from loopx_site.engines import fulltext
from loopx_site.engines.fulltext import bm25


def test_stop_words_are_dropped_and_negations_kept():
    assert bm25.query_tokens("How long should the PR description be?") == ["long", "pr", "descript"]
    assert bm25.document_tokens("Never merge; do not push.") == ["never", "merg", "not", "push"]


def test_inflections_meet_on_one_stem():
    assert bm25.query_tokens("descriptions") == bm25.query_tokens("description")
    assert bm25.query_tokens("reviewing reviews") == ["review"]


def test_a_query_of_only_stop_words_matches_nothing():
    assert bm25.query_tokens("what is the") == []
    assert bm25.rank([("a", "the cat")], "the", 5) == []


def test_the_newcomers_query_finds_the_length_rule_first():
    ranked = [
        ref
        for ref, _ in bm25.Reference(RECORDS.items()).rank(
            "how long should the PR description be", 3
        )
    ]
    assert ranked[0] == "demo-short-descriptions"
    plain = [
        ref
        for ref, _ in bm25.Reference(RECORDS.items(), analyzer=bm25.PLAIN).rank(
            "how long should the PR description be", 5
        )
    ]
    assert plain.index("demo-issue-in-title") < plain.index("demo-short-descriptions")


def test_the_english_analyzer_does_better_than_plain_on_the_relevance_set():
    assert rate(evaluate(bm25.ENGLISH)) > rate(evaluate(bm25.PLAIN))


@pytest.mark.django_db
def test_the_index_returns_the_reference_ranking_for_every_relevance_query():
    from bench.relevance_set import QUERIES

    fulltext.index_many("relevance", RECORDS.items())
    reference = bm25.Reference(RECORDS.items())
    for query, _ in QUERIES:
        expected = [ref for ref, _ in reference.rank(query, 5)]
        assert [h.ref for h in fulltext.search("relevance", query, limit=5)] == expected, query
