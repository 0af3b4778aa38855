import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopx_site.core import bm25, fulltext
from loopx_site.core.models import SearchDocument


@pytest.fixture
def corpus(db):
    fulltext.index("c1", "r1", "Ask the designated reviewer before merging")
    fulltext.index("c1", "r2", "Write concise PR descriptions with a reviewer checklist")
    fulltext.index("c1", "r3", "Prefer small commits")
    fulltext.index("c2", "x1", "Ask the designated reviewer before merging")


def test_search_ranks_matches_within_one_namespace(corpus):
    hits = fulltext.search("c1", "designated reviewer merging", limit=5)
    assert [h.ref for h in hits][:2] == ["r1", "r2"]
    assert "x1" not in [h.ref for h in hits]
    assert hits[0].score >= hits[1].score


def test_search_never_crosses_namespaces(corpus):
    assert [h.ref for h in fulltext.search("c2", "reviewer", limit=5)] == ["x1"]
    assert fulltext.search("c3", "reviewer", limit=5) == []


def test_reindex_replaces_body_and_remove_forgets(corpus):
    fulltext.index("c1", "r3", "Prefer squash merges")
    assert [h.ref for h in fulltext.search("c1", "squash", limit=5)] == ["r3"]
    assert fulltext.search("c1", "commits", limit=5) == []
    fulltext.remove("c1", "r3")
    assert fulltext.search("c1", "squash", limit=5) == []
    assert SearchDocument.objects.filter(namespace="c1").count() == 2


@pytest.mark.parametrize("query", ["", "   ", '"*:()', "OR AND NOT"])
def test_queries_with_syntax_characters_or_no_words_are_safe(corpus, query):
    hits = fulltext.search("c1", query, limit=5)
    assert isinstance(hits, list)


def test_limit_bounds_the_hits(corpus):
    assert len(fulltext.search("c1", "reviewer commits prefer", limit=1)) == 1


_namespaces = iter(range(10**9))


@pytest.mark.django_db
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    bodies=st.lists(st.text(alphabet="abcdeÄß İ_1 .,", max_size=30), max_size=25),
    query=st.text(alphabet="abcdeÄß İ_1 .,", max_size=12),
    limit=st.integers(min_value=1, max_value=8),
)
def test_search_equals_the_reference_bm25_for_any_text(bodies, query, limit):
    namespace = f"h{next(_namespaces)}"
    docs = [(f"d{i:02d}", body) for i, body in enumerate(bodies)]
    fulltext.index_many(namespace, docs)
    hits = fulltext.search(namespace, query, limit=limit)
    assert [(h.ref, h.score) for h in hits] == bm25.rank(docs, query, limit)


def test_long_tokens_are_cut_to_the_reference_length(corpus):
    fulltext.index("c1", "long", "x" * 200 + " tail")
    assert [h.ref for h in fulltext.search("c1", "x" * 64 + "y", limit=5)] == ["long"]


def test_documents_keep_their_timestamps_and_dense_slots(corpus):
    from loopx_site.core.models import SearchNamespace

    docs = list(SearchDocument.objects.filter(namespace="c1").order_by("slot"))
    assert [d.slot for d in docs] == [0, 1, 2]
    assert all(d.updated_at is not None and d.updated_at.tzinfo is not None for d in docs)
    fulltext.remove("c1", "r2")
    fulltext.index("c1", "r4", "new words")
    stats = SearchNamespace.objects.get(name="c1")
    assert SearchDocument.objects.get(namespace="c1", ref="r4").slot == 3  # never reused
    assert (stats.documents, stats.next_slot) == (3, 4)
    assert stats.tokens == sum(d.length for d in SearchDocument.objects.filter(namespace="c1"))


def test_rebuild_recomputes_the_same_index_from_the_stored_bodies(corpus):
    before = [(h.ref, h.score) for h in fulltext.search("c1", "reviewer merging prefer")]
    assert fulltext.rebuild() == 4
    assert [(h.ref, h.score) for h in fulltext.search("c1", "reviewer merging prefer")] == before
    assert [h.ref for h in fulltext.search("c2", "reviewer")] == ["x1"]


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_of_one_namespace_keep_statistics_and_postings_exact():
    import threading

    from django.db import connection as default_connection

    from loopx_site.core.models import SearchNamespace

    start = threading.Barrier(4)
    errors = []

    def writer(n):
        try:
            start.wait()
            for i in range(15):
                fulltext.index(
                    "race", f"w{n}-{i:02d}", f"shared words writer{n} item{i} " * (i % 3 + 1)
                )
                if i % 5 == 4:
                    fulltext.remove("race", f"w{n}-{i - 1:02d}")
        except Exception as exc:  # reported below; a thread must not die silently
            errors.append(repr(exc))
        finally:
            default_connection.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    docs = list(SearchDocument.objects.filter(namespace="race").values_list("ref", "body"))
    stats = SearchNamespace.objects.get(name="race")
    assert stats.documents == len(docs) == 4 * 12
    assert stats.tokens == sum(len(bm25.document_tokens(body)) for _, body in docs)
    for query in ["shared words", "writer2 item7", "item1 writer0 words"]:
        hits = fulltext.search("race", query, limit=10)
        assert [(h.ref, h.score) for h in hits] == bm25.rank(docs, query, 10)
