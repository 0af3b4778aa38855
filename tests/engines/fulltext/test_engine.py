import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import loopx_site.engines.fulltext as ft
from loopx_site.core.models import SearchDocument
from loopx_site.engines.fulltext import bm25, derived
from loopx_site.engines.fulltext import engine as fulltext


@pytest.fixture(autouse=True, params=["derived", "small", "large"])
def search_path(request, monkeypatch):
    """Every test runs on the three search paths: from the process's copy of the lists
    (``derived``, the default); and, with no copy, in one snapshot: small namespaces read
    every posting in one statement; large ones (MaxScore, best-first exact scoring) skip
    what cannot matter."""
    if request.param != "derived":
        monkeypatch.setattr(derived, "budget", lambda: 0)
    monkeypatch.setattr(fulltext, "_SMALL", 10**9 if request.param == "small" else 0)
    return request.param


@pytest.fixture
def corpus(db):
    fulltext.index("c1", "r1", "Ask the designated reviewer before merging")
    fulltext.index("c1", "r2", "Write concise PR descriptions with a reviewer checklist")
    fulltext.index("c1", "r3", "Prefer small commits")
    fulltext.index("c2", "x1", "Ask the designated reviewer before merging")


def test_search_ranks_matches_within_one_namespace(corpus):
    hits = ft.search("c1", "designated reviewer merging", limit=5)
    assert [h.ref for h in hits][:2] == ["r1", "r2"]
    assert "x1" not in [h.ref for h in hits]
    assert hits[0].score >= hits[1].score


def test_search_never_crosses_namespaces(corpus):
    assert [h.ref for h in ft.search("c2", "reviewer", limit=5)] == ["x1"]
    assert ft.search("c3", "reviewer", limit=5) == []


def test_reindex_replaces_body_and_remove_forgets(corpus):
    fulltext.index("c1", "r3", "Prefer squash merges")
    assert [h.ref for h in ft.search("c1", "squash", limit=5)] == ["r3"]
    assert ft.search("c1", "commits", limit=5) == []
    fulltext.remove("c1", "r3")
    assert ft.search("c1", "squash", limit=5) == []
    assert SearchDocument.objects.filter(namespace="c1").count() == 2


@pytest.mark.parametrize("query", ["", "   ", '"*:()', "OR AND NOT"])
def test_queries_with_syntax_characters_or_no_words_are_safe(corpus, query):
    hits = ft.search("c1", query, limit=5)
    assert isinstance(hits, list)


def test_limit_bounds_the_hits(corpus):
    assert len(ft.search("c1", "reviewer commits prefer", limit=1)) == 1


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
    hits = ft.search(namespace, query, limit=limit)
    assert [(h.ref, h.score) for h in hits] == bm25.rank(docs, query, limit)


def test_long_tokens_are_cut_to_the_reference_length(corpus):
    fulltext.index("c1", "long", "x" * 200 + " tail")
    assert [h.ref for h in ft.search("c1", "x" * 64 + "y", limit=5)] == ["long"]


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
    before = [(h.ref, h.score) for h in ft.search("c1", "reviewer merging prefer")]
    assert fulltext.rebuild() == 4
    assert [(h.ref, h.score) for h in ft.search("c1", "reviewer merging prefer")] == before
    assert [h.ref for h in ft.search("c2", "reviewer")] == ["x1"]


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
        hits = ft.search("race", query, limit=10)
        assert [(h.ref, h.score) for h in hits] == bm25.rank(docs, query, 10)


# --- exact top-k that skips what cannot matter (block bounds, MaxScore, one snapshot) ---

_COMMON = ["alpha", "beta", "gamma"]
_MEDIUM = [f"mid{i}" for i in range(8)]
_RARE = [f"rare{i}" for i in range(24)]
_VOCAB = _COMMON + _MEDIUM + _RARE


def _skewed_body(draw_words: list[int]) -> str:
    return " ".join(_VOCAB[i % len(_VOCAB)] for i in draw_words)


_word = st.one_of(
    st.integers(0, len(_COMMON) - 1),  # very common
    st.integers(0, len(_COMMON) - 1),
    st.integers(len(_COMMON), len(_COMMON) + len(_MEDIUM) - 1),
    st.integers(0, len(_VOCAB) - 1),  # anything, rare terms included
)


@pytest.mark.django_db
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    bodies=st.lists(st.lists(_word, min_size=1, max_size=14), min_size=1, max_size=160),
    changes=st.lists(
        st.tuples(st.integers(0, 159), st.none() | st.lists(_word, min_size=1, max_size=14)),
        max_size=30,
    ),
    queries=st.lists(
        st.tuples(
            st.lists(st.integers(0, len(_VOCAB) - 1), min_size=1, max_size=5), st.integers(1, 12)
        ),
        min_size=1,
        max_size=8,
    ),
    first_batch=st.sampled_from([1, 2, 32]),
    route=st.sampled_from(["bodies", "look-ups"]),
    cells=st.booleans(),
)
def test_search_equals_the_reference_top_k_on_skewed_corpora_with_removals(
    monkeypatch, bodies, changes, queries, first_batch, route, cells
):
    monkeypatch.setattr(fulltext, "_FIRST_BATCH", first_batch)  # many best-first rounds
    if route == "look-ups":  # every candidate scored by looking it up in the unread lists
        monkeypatch.setattr(fulltext, "_VERIFY_ALWAYS", 0)
        monkeypatch.setattr(fulltext, "_BODY_COST", 10**9)
        monkeypatch.setattr(fulltext, "_PROBE_SHARE", 0)
    # weights from (tf, dl) tables, hence per-cell bounds, even for short lists
    monkeypatch.setattr(fulltext, "_TABLE_MIN", 0 if cells else 10**9)
    namespace = f"s{next(_namespaces)}"
    docs = {f"d{i:03d}": _skewed_body(words) for i, words in enumerate(bodies)}
    fulltext.index_many(namespace, docs.items())
    for i, words in changes:  # removals, replacements and re-insertions
        ref = f"d{i:03d}"
        if words is None:
            fulltext.remove(namespace, ref)
            docs.pop(ref, None)
        else:
            docs[ref] = _skewed_body(words)
            fulltext.index(namespace, ref, docs[ref])
    pairs = sorted(docs.items())
    for words, limit in queries:
        query = " ".join(_VOCAB[i] for i in words)
        got = [(h.ref, h.score) for h in ft.search(namespace, query, limit=limit)]
        want = bm25.rank(pairs, query, limit)
        assert [r for r, _ in got] == [r for r, _ in want], query
        assert all(abs(a - b) <= 1e-9 for (_, a), (_, b) in zip(got, want, strict=True))


def _blocks(namespace: str):
    from loopx_site.core.models import SearchPostingBlock

    for block in SearchPostingBlock.objects.filter(namespace__name=namespace):
        packed = fulltext._decode(block.data, block.count, block.bucket)
        yield block, list(packed[1::3]), list(packed[2::3])


def test_block_bounds_hold_every_posting_through_insert_replace_remove_reinsert(db):
    fulltext.index_many("b", [(f"d{i}", "review " * (i % 4 + 1) + "x " * i) for i in range(30)])
    fulltext.index("b", "d3", "review review review review review")  # replace: tf grows
    fulltext.index("b", "d4", "x")  # replace: shorter, no "review" any more
    fulltext.remove("b", "d5")
    fulltext.index("b", "d5", "review x")  # re-insert (a new slot)
    fulltext.index("b", "d31", "review")  # append
    seen = 0
    for block, tfs, dls in _blocks("b"):
        assert block.count == len(tfs)
        assert block.max_tf == max(tfs)  # exact here; a bound is never below a posting
        assert block.min_dl == min(dls)
        seen += 1
    assert seen == 2  # "review" and "x"
    fulltext.remove("b", "d3")
    review = next(b for b, _, _ in _blocks("b") if b.term == "review")
    assert review.max_tf == 4  # recomputed after the removal of the only tf-5 posting


def test_migration_fills_the_bounds_of_existing_blocks_from_their_data(db, monkeypatch):
    import importlib

    from django.db import connection

    from loopx_site.core.models import SearchPostingBlock

    migration = importlib.import_module("loopx_site.core.migrations.0009_search_block_bounds")
    monkeypatch.setattr(fulltext, "_NARROW_MAX", -1)  # blocks as written before 0010
    fulltext.index_many("m", [(f"d{i}", "merge " * (i % 3 + 1) + "y " * i) for i in range(9)])
    SearchPostingBlock.objects.update(max_tf=0, min_dl=0)

    class Editor:
        pass

    editor = Editor()
    editor.connection = connection
    migration.fill_bounds(None, editor)
    for block, tfs, dls in _blocks("m"):
        assert (block.max_tf, block.min_dl) == (max(tfs), min(dls))


def test_unrecorded_bounds_still_rank_exactly(db):
    from loopx_site.core.models import SearchPostingBlock

    docs = [
        (f"d{i:02d}", "common " * (i % 3 + 1) + ("rare" if i % 7 == 0 else "")) for i in range(40)
    ]
    fulltext.index_many("u", docs)
    SearchPostingBlock.objects.update(max_tf=0, min_dl=0)  # e.g. written before 0009
    for query in ["rare common", "common", "rare"]:
        assert [(h.ref, h.score) for h in ft.search("u", query, limit=3)] == bm25.rank(
            docs, query, 3
        )


def test_search_leaves_the_postings_of_a_common_term_unread_when_they_cannot_matter(
    db, monkeypatch
):
    monkeypatch.setattr(derived, "budget", lambda: 0)  # the snapshot path's reads
    docs = [(f"d{i:03d}", f"common filler{i % 50} words") for i in range(600)]
    docs += [(f"r{i}", "rare common") for i in range(3)]
    fulltext.index_many("skip", docs)
    read = []
    original = fulltext._read_postings

    def spy(ns_id, batch, avgdl):
        read.extend(t.word for t in batch)
        original(ns_id, batch, avgdl)

    monkeypatch.setattr(fulltext, "_read_postings", spy)
    monkeypatch.setattr(fulltext, "_ROUND_TRIP", 0)
    monkeypatch.setattr(
        fulltext, "_SMALL", 0
    )  # the path under test  # short lists are not read together
    hits = ft.search("skip", "rare common", limit=2)
    assert [(h.ref, h.score) for h in hits] == bm25.rank(docs, "rare common", 2)
    assert read == ["rare"]  # the 603 postings of "common" were never read


def test_search_inside_a_callers_transaction_reads_in_its_snapshot(db):
    from django.db import transaction

    docs = [("a", "lock rollback"), ("b", "lock lock")]
    fulltext.index_many("tx", docs)
    with transaction.atomic():
        fulltext.index("tx", "c", "rollback rollback rollback")
        hits = ft.search("tx", "rollback lock", limit=3)
    assert [(h.ref, h.score) for h in hits] == bm25.rank(
        [*docs, ("c", "rollback rollback rollback")], "rollback lock", 3
    )


@pytest.mark.django_db(transaction=True)
def test_every_statement_of_a_search_reads_one_snapshot_while_a_writer_commits(monkeypatch):
    import threading
    import time

    from django.db import connection as default_connection

    # two states of one namespace; the writer flips between them, one transaction each
    state_a = [
        (f"d{i:02d}", "common " * (i % 3 + 1) + ("rare" if i % 5 == 0 else "")) for i in range(60)
    ]
    state_b = [(f"d{i:02d}", "common rare " * (i % 2 + 1) + "tail " * (i % 4)) for i in range(60)]
    query = "rare common"
    allowed = [bm25.rank(state_a, query, 4), bm25.rank(state_b, query, 4)]
    fulltext.index_many("snap", state_a)
    stop, errors = threading.Event(), []

    def writer():
        try:
            flip = 0
            while not stop.is_set():
                flip ^= 1
                fulltext.index_many("snap", state_b if flip else state_a)
        except Exception as exc:  # reported below
            errors.append(repr(exc))
        finally:
            default_connection.close()

    original = fulltext._read_postings

    def slow(*args):  # widen the window between the statistics and the postings
        time.sleep(0.005)
        original(*args)

    monkeypatch.setattr(fulltext, "_read_postings", slow)
    monkeypatch.setattr(fulltext, "_SMALL", 0)  # the path under test
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        seen = []
        for _ in range(60):
            seen.append([(h.ref, h.score) for h in ft.search("snap", query, limit=4)])
    finally:
        stop.set()
        thread.join()
    assert errors == []
    assert all(result in allowed for result in seen)


def test_one_block_without_recorded_bounds_leaves_its_term_unbounded(db, monkeypatch):
    from loopx_site.core.models import SearchPostingBlock

    monkeypatch.setattr(fulltext, "BUCKET", 4)  # many blocks per term
    monkeypatch.setattr(fulltext, "_SMALL", 0)  # the path under test
    monkeypatch.setattr(fulltext, "_ROUND_TRIP", 0)  # one list per statement
    docs = [(f"r{i}", "rare filler filler filler filler filler") for i in range(6)]
    docs += [(f"c{i}", "common filler filler filler filler") for i in range(10)]
    docs += [("hot", "common common common")] + [(f"p{i:02d}", "filler") for i in range(20)]
    fulltext.index_many("mixed", docs)
    # the block holding the best "common" posting lost its max_tf: the other blocks'
    # (max_tf 1) would bound "common" below "hot"'s real contribution
    SearchPostingBlock.objects.filter(term="common", bucket=16 // 4).update(max_tf=0)
    for query, limit in [("rare common", 1), ("rare common", 4), ("common", 1)]:
        hits = ft.search("mixed", query, limit=limit)
        assert [(h.ref, h.score) for h in hits] == bm25.rank(docs, query, limit)
    assert ft.search("mixed", "rare common", limit=1)[0].ref == "hot"


def test_weight_tables_of_long_posting_lists_give_the_reference_scores_bit_for_bit(db):
    docs = [
        (f"d{i:04d}", "deploy " * (i % 5 + 1) + "pad " * (i % 13) + ("rollback" if i % 9 else ""))
        for i in range(fulltext._TABLE_MIN + 200)
    ]
    fulltext.index_many("table", docs)
    for query in ["deploy", "pad deploy", "rollback deploy pad"]:
        hits = ft.search("table", query, limit=6)
        assert [(h.ref, h.score) for h in hits] == bm25.rank(docs, query, 6)


def test_long_documents_bound_their_unread_terms_elementwise(db, monkeypatch):
    monkeypatch.setattr(fulltext, "_SMALL", 0)
    monkeypatch.setattr(fulltext, "_ROUND_TRIP", 0)  # one list per statement
    docs = [(f"d{i:02d}", "common " * (i % 3 + 1) + "word " * (i * 7)) for i in range(45)]
    docs += [("r1", "rare common"), ("r2", "rare " + "common " * 300)]  # dl beyond the table
    fulltext.index_many("long", docs)
    for query, limit in [("rare common", 1), ("rare common", 3), ("rare word common", 2)]:
        hits = ft.search("long", query, limit=limit)
        assert [(h.ref, h.score) for h in hits] == bm25.rank(docs, query, limit)


@pytest.mark.parametrize(
    ("bucket", "by_bucket"),
    [(64, True), (2048, False)],  # candidates in 2 of 25 buckets; in the only bucket
)
def test_common_terms_are_looked_up_for_the_candidates_instead_of_decoded(
    db, monkeypatch, bucket, by_bucket
):
    monkeypatch.setattr(derived, "budget", lambda: 0)  # the snapshot path's reads
    monkeypatch.setattr(fulltext, "BUCKET", bucket)
    monkeypatch.setattr(fulltext, "_SMALL", 0)
    monkeypatch.setattr(fulltext, "_ROUND_TRIP", 0)  # one list per statement
    monkeypatch.setattr(fulltext, "_TABLE_MIN", 0)
    docs = [(f"d{i:04d}", f"common filler{i % 40} " + "often " * (i % 3)) for i in range(1500)]
    docs += [(f"r{i}", "rare " * (i % 2 + 1) + "common often") for i in range(80)]
    fulltext.index_many("lookups", docs)
    decoded, probed, statements = [], [], []
    read_postings, probe, fetch = fulltext._read_postings, fulltext._probe, fulltext._fetch

    def spy_fetch(sql, params):
        statements.append(sql)
        return fetch(sql, params)

    monkeypatch.setattr(fulltext, "_fetch", spy_fetch)

    def spy_read(lists, batch, avgdl):
        decoded.extend(t.word for t in batch)
        read_postings(lists, batch, avgdl)

    def spy_probe(*args):
        scored, totals = probe(*args)
        probed.append([t.word for t in args[4]])
        return scored, totals

    monkeypatch.setattr(fulltext, "_read_postings", spy_read)
    monkeypatch.setattr(fulltext, "_probe", spy_probe)
    monkeypatch.setattr(fulltext, "_VERIFY_ALWAYS", 0)  # 80 candidates: too many for bodies
    monkeypatch.setattr(fulltext, "_BODY_COST", 10**9)
    for limit in (1, 5, 30):
        hits = ft.search("lookups", "rare common often", limit=limit)
        assert [(h.ref, h.score) for h in hits] == bm25.rank(docs, "rare common often", limit)
    assert set(decoded) == {"rare"}  # the long lists were never decoded whole
    assert probed
    assert all(set(words) == {"common", "often"} for words in probed)
    # only the candidates' blocks, or (most buckets needed) the whole list in one go
    assert any("AND bucket" in sql for sql in statements) == by_bucket


@settings(max_examples=200, deadline=None)
@given(
    terms=st.lists(
        st.tuples(st.integers(1, 999), st.integers(0, 4), st.integers(0, 7)),
        min_size=1,
        max_size=4,
    ),
    avgdl=st.floats(1.0, 9.0),
)
def test_the_shared_token_ceiling_is_the_best_allocation_of_a_documents_tokens(terms, avgdl):
    """``_ceilings[room, dl]`` is the most the unread terms can add to a document of
    length ``dl`` with ``room`` tokens left — each term at most its ``max_tf`` (0: any),
    none in a document shorter than its ``min_dl`` — found by trying every allocation."""
    import itertools

    unread = [fulltext._Term("t", df, tf, dl, 1000, avgdl) for df, tf, dl in terms]
    top_dl = 7
    table = fulltext._ceilings(unread, top_dl, avgdl)
    for dl in range(top_dl + 1):
        for room in range(dl + 1):
            caps = [
                0 if dl < t.min_dl else min(room, t.max_tf) if t.max_tf > 0 else room
                for t in unread
            ]
            best = max(
                sum(
                    t.idf * bm25.weight(float(x), float(dl), avgdl)
                    for t, x in zip(unread, xs, strict=True)
                )
                for xs in itertools.product(*(range(c + 1) for c in caps))
                if sum(xs) <= room
            )
            assert table[room, dl] == pytest.approx(best, rel=1e-12, abs=1e-12)
    outside = fulltext._outside(unread, avgdl)
    longest = max(top_dl, sum(t.max_tf for t in unread) + max(t.min_dl for t in unread))
    for dl in range(1, longest + 1):  # a document holding none of the read terms
        caps = [0 if dl < t.min_dl else min(dl, t.max_tf) if t.max_tf > 0 else dl for t in unread]
        for xs in itertools.product(*(range(c + 1) for c in caps)):
            if sum(xs) <= dl:
                score = sum(
                    t.idf * bm25.weight(float(x), float(dl), avgdl)
                    for t, x in zip(unread, xs, strict=True)
                )
                assert score <= outside


def test_the_slot_accumulators_are_zeros_again_after_a_search_that_failed(db, monkeypatch):
    import numpy as np

    monkeypatch.setattr(fulltext, "_SMALL", 0)
    docs = [(f"d{i:03d}", "common " * (i % 3 + 1) + f"word{i % 7}") for i in range(300)]
    fulltext.index_many("scratch", docs)
    ft.search("scratch", "common word1 word2", limit=3)

    def broken(*args):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(fulltext, "_hits", broken)  # while the accumulators are in use
    monkeypatch.setattr(derived, "_refs", broken)
    with pytest.raises(RuntimeError):
        ft.search("scratch", "common word1 word2", limit=3)
    scores, counts = fulltext._scratch.arrays(1)
    assert not np.any(scores)
    assert not np.any(counts)


def test_compact_and_wide_blocks_of_one_list_rank_exactly(db, monkeypatch):
    """A block whose tfs and lengths all fit in a byte takes 4 bytes a posting, any other
    12; one term's list may hold both kinds (here: a block with a 300-token document)."""
    from loopx_site.core.models import SearchPostingBlock

    monkeypatch.setattr(fulltext, "BUCKET", 8)
    docs = [(f"d{i:02d}", "deploy " * (i % 4 + 1) + "pad " * (i % 5)) for i in range(40)]
    docs.append(("long", "deploy rollback " + "pad " * 300))
    fulltext.index_many("formats", docs)
    widths = {
        b.bucket: len(b.data) // b.count for b in SearchPostingBlock.objects.filter(term="deploy")
    }
    assert widths[40 // 8] == 12  # the long document's block
    assert {w for bucket, w in widths.items() if bucket != 40 // 8} == {4}
    for query, limit in [("deploy", 5), ("deploy pad", 3), ("rollback deploy", 2)]:
        hits = ft.search("formats", query, limit=limit)
        assert [(h.ref, h.score) for h in hits] == bm25.rank(docs, query, limit)


def test_migration_narrows_wide_blocks_and_its_reverse_widens_them_back(db, monkeypatch):
    import importlib

    from django.db import connection

    from loopx_site.core.models import SearchPostingBlock

    migration = importlib.import_module("loopx_site.core.migrations.0010_narrow_posting_blocks")
    monkeypatch.setattr(fulltext, "BUCKET", 8)
    monkeypatch.setattr(fulltext, "_NARROW_MAX", -1)  # blocks as written before 0010
    docs = [(f"d{i:02d}", "merge " * (i % 3 + 1) + "y " * i) for i in range(32)]
    docs.append(("long", "merge " + "y " * 300))  # slot 32: the only document of bucket 4
    fulltext.index_many("n", docs)
    before = {
        (b.term, b.bucket): fulltext._decode(b.data, b.count, b.bucket)
        for b in SearchPostingBlock.objects.all()
    }
    want = [(h.ref, h.score) for h in ft.search("n", "merge y", limit=5)]

    class Editor:
        pass

    editor = Editor()
    editor.connection = connection
    migration.narrow_blocks(None, editor)
    blocks = list(SearchPostingBlock.objects.all())
    assert {len(b.data) // b.count for b in blocks if b.bucket < 4} == {6}
    assert {len(b.data) // b.count for b in blocks if b.bucket == 4} == {12}  # 300 tokens
    assert {
        (b.term, b.bucket): fulltext._decode(b.data, b.count, b.bucket) for b in blocks
    } == before
    assert [(h.ref, h.score) for h in ft.search("n", "merge y", limit=5)] == want
    migration.widen_blocks(None, editor)
    assert {len(b.data) // b.count for b in SearchPostingBlock.objects.all()} == {12}
    assert [(h.ref, h.score) for h in ft.search("n", "merge y", limit=5)] == want


def test_migration_compacts_narrow_blocks_and_its_reverse_narrows_them_back(db, monkeypatch):
    """0011 stores each slot as its offset in the bucket (4 bytes a posting): checked
    past the first bucket (2100 documents), with a wide block left as it is."""
    import importlib

    from django.db import connection

    from loopx_site.core.models import SearchPostingBlock

    narrowing = importlib.import_module("loopx_site.core.migrations.0010_narrow_posting_blocks")
    migration = importlib.import_module("loopx_site.core.migrations.0011_compact_posting_blocks")
    assert fulltext.BUCKET == migration._BUCKET
    monkeypatch.setattr(fulltext, "_NARROW_MAX", -1)  # blocks as written before 0010
    docs = [(f"d{i:04d}", "merge " * (i % 3 + 1) + "y " * (i % 7)) for i in range(2100)]
    docs.append(("long", "merge " + "y " * 300))  # slot 2100, in bucket 1 with d2048…
    fulltext.index_many("c", docs)

    class Editor:
        pass

    editor = Editor()
    editor.connection = connection
    narrowing.narrow_blocks(None, editor)  # as 0010 left them: 6 bytes, bucket 1 wide
    before = {
        (b.term, b.bucket): fulltext._decode(b.data, b.count, b.bucket)
        for b in SearchPostingBlock.objects.all()
    }
    want = [(h.ref, h.score) for h in ft.search("c", "merge y", limit=5)]
    assert want == bm25.rank(docs, "merge y", 5)

    def widths():
        return {
            (b.term, b.bucket): len(b.data) // b.count for b in SearchPostingBlock.objects.all()
        }

    assert widths() == {("merg", 0): 6, ("y", 0): 6, ("merg", 1): 12, ("y", 1): 12}
    migration.compact_blocks(None, editor)
    assert widths() == {("merg", 0): 4, ("y", 0): 4, ("merg", 1): 12, ("y", 1): 12}
    blocks = list(SearchPostingBlock.objects.all())
    assert {
        (b.term, b.bucket): fulltext._decode(b.data, b.count, b.bucket) for b in blocks
    } == before
    assert [(h.ref, h.score) for h in ft.search("c", "merge y", limit=5)] == want
    monkeypatch.undo()  # today's writer
    fulltext.remove("c", "long")  # bucket 1 rewritten: compact now
    assert widths()[("merg", 1)] == 4
    migration.narrow_blocks(None, editor)
    assert set(widths().values()) == {6}
    docs.pop()
    assert [(h.ref, h.score) for h in ft.search("c", "merge y", limit=5)] == bm25.rank(
        docs, "merge y", 5
    )


def test_posting_blobs_are_stored_uncompressed_and_in_their_row_on_postgresql(db):
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's column storage")
    fulltext.index_many("plain", [(f"d{i:04d}", f"common word{i % 9}") for i in range(1500)])
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT attstorage FROM pg_attribute WHERE attrelid = "
            "'core_searchpostingblock'::regclass AND attname = 'data'"
        )
        assert cursor.fetchone() == ("e",)  # EXTERNAL: never compressed
        cursor.execute(
            "SELECT reloptions FROM pg_class WHERE oid = 'core_searchpostingblock'::regclass"
        )
        assert cursor.fetchone() == (["toast_tuple_target=8160"],)
        cursor.execute(
            "SELECT octet_length(b.data), pg_column_size(b.data), pg_column_compression(b.data) "
            "FROM core_searchpostingblock b JOIN core_searchnamespace n "
            "ON n.id = b.namespace_id WHERE n.name = 'plain' AND b.term = 'common'"
        )
        ((size, stored, compression),) = cursor.fetchall()
    assert size == 4 * 1500  # above the 2 KB from which PostgreSQL would move it out of line
    assert stored == size + 4  # in the row, with its 4-byte header (out of line: size)
    assert compression is None


def test_a_search_leaves_the_connection_as_it_found_it(transactional_db, monkeypatch):
    from django.db import connection

    monkeypatch.setattr(fulltext, "_SMALL", 0)  # the path with a snapshot of its own
    fulltext.index_many("conn", [(f"d{i}", f"lock word{i % 3}") for i in range(20)])
    if connection.vendor == "postgresql":
        raw = connection.connection
        before = (raw.isolation_level, raw.read_only)
    assert ft.search("conn", "lock word1", limit=2)
    if connection.vendor == "postgresql":
        assert (raw.isolation_level, raw.read_only) == before
    fulltext.index("conn", "after", "fresh lock")  # a write right after: not read-only
    assert [h.ref for h in ft.search("conn", "fresh", limit=1)] == ["after"]


@settings(max_examples=200, deadline=None)
@given(
    size=st.integers(1, 3000),
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 8),
    sampled=st.sampled_from([64, 1024]),  # (at least 64: the sample's stride is ≥ 1)
)
def test_the_largest_values_are_found_with_or_without_a_sample(size, seed, n, sampled):
    """``_largest`` (the seeds scored first): the positions of ``n`` largest values, ties
    included in any order — a sampled cut (arrays over ``_SAMPLED`` × n) loses none."""
    import numpy as np

    array = np.random.default_rng(seed).integers(0, 30, size).astype(np.float64)  # ties
    values = array.tolist()
    original = fulltext._SAMPLED
    fulltext._SAMPLED = sampled
    try:
        found = fulltext._largest(array, n)
    finally:
        fulltext._SAMPLED = original
    assert len(set(found.tolist())) == len(found) == min(n, len(values))
    assert sorted(array[found].tolist()) == sorted(values)[-min(n, len(values)) :]


@settings(max_examples=100, deadline=None)
@given(
    present=st.sets(st.integers(0, 5000), min_size=1, max_size=400),
    asked=st.sets(st.integers(0, 5100), min_size=1, max_size=400),
)
def test_a_read_terms_values_for_candidates_are_its_postings_or_zero(present, asked):
    """``_in_read``, by binary search (few candidates) or through the slot accumulators
    (many): each candidate's contribution, tf and dl, 0 where the term is absent."""
    import numpy as np

    term = fulltext._Term("t", len(present), 3, 1, 10_000, 12.0)
    term.slots = np.array(sorted(present), dtype=np.intp)
    term.tf = (term.slots % 3 + 1).astype(np.uint8)
    term.dl = (term.slots % 50 + 3).astype(np.uint8)
    term.contribution = term.slots * 0.5 + 1.0
    slots = np.array(sorted(asked), dtype=np.intp)
    values, tf, dl = fulltext._in_read(term, slots)
    for slot, value, f, d in zip(slots.tolist(), values, tf, dl, strict=True):
        if slot in present:
            assert (value, f, d) == (slot * 0.5 + 1.0, slot % 3 + 1, slot % 50 + 3)
        else:
            assert (value, f, d) == (0.0, 0, 0)
    scores, counts = fulltext._scratch.arrays(1)
    assert not np.any(scores)  # the accumulators left as zeros
    assert not np.any(counts)


def _stored_blocks(namespace: str) -> list[tuple]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT b.term, b.bucket, b.count, b.max_tf, b.min_dl, b.data "
            "FROM core_searchpostingblock b JOIN core_searchnamespace n ON n.id = b.namespace_id "
            "WHERE n.name = %s ORDER BY b.term, b.bucket",
            [namespace],
        )
        return [(*row[:5], bytes(row[5])) for row in cursor.fetchall()]


def test_a_bulk_load_stores_what_one_by_one_writes_store(db, search_path, monkeypatch):
    """``index_many`` of new documents builds their postings in one pass (numpy); the
    blocks, statistics and rankings are those of the same documents written one at a
    time — across bucket boundaries, into a bucket already holding postings, and with a
    tf past one byte (a 12-byte block)."""
    if search_path != "derived":
        pytest.skip("a write path: one search path is enough")
    monkeypatch.setattr(fulltext, "BUCKET", 64)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    docs = [
        (f"d{i:04d}", " ".join(words[(i * j) % 8] for j in range(1, 3 + i % 9))) for i in range(300)
    ]
    docs[150] = ("d0150", "alpha " * 300 + "beta")  # tf 300, dl 301: the wide format
    for ref, body in docs[:10]:  # a partly filled bucket before the bulk loads
        fulltext.index("bulk", ref, body)
    fulltext.index_many("bulk", docs[10:140])
    fulltext.index_many("bulk", docs[140:300])
    for ref, body in docs:
        fulltext.index("single", ref, body)
    assert _stored_blocks("bulk") == _stored_blocks("single")
    for query in ("alpha", "beta gamma", "zeta eta theta alpha"):
        assert [(h.ref, h.score) for h in ft.search("bulk", query, limit=7)] == bm25.rank(
            docs, query, 7
        )
