"""A process's copy of the posting lists (``derived``) answers only for the revision it
was made at, and exactly."""

import pytest
from django.db import transaction

import loopx_site.engines.fulltext as ft
from loopx_site.core.models import SearchNamespace
from loopx_site.engines.fulltext import bm25, derived
from loopx_site.engines.fulltext import engine as fulltext

DOCS = [
    (f"d{i:03d}", "common " * (i % 3 + 1) + f"word{i % 7} " + "rare" * (i % 11 == 0))
    for i in range(200)
]


def _ranked(namespace: str, query: str, limit: int = 4):
    return [(h.ref, h.score) for h in ft.search(namespace, query, limit=limit)]


def test_every_write_gives_the_namespace_a_new_revision(db):
    fulltext.index_many("rev", DOCS[:10])
    seen = {SearchNamespace.objects.get(name="rev").revision}
    fulltext.index("rev", "d000", "another body")
    seen.add(SearchNamespace.objects.get(name="rev").revision)
    fulltext.remove("rev", "d001")
    seen.add(SearchNamespace.objects.get(name="rev").revision)
    fulltext.rebuild("rev")
    seen.add(SearchNamespace.objects.get(name="rev").revision)
    assert len(seen) == 4
    assert 0 not in seen


def _spy_reads(monkeypatch) -> list[str]:
    reads, original = [], derived._read

    def spy(conn, sql, params):
        reads.append(sql)
        return original(conn, sql, params)

    monkeypatch.setattr(derived, "_read", spy)
    return reads


def test_a_search_at_a_known_revision_reads_one_row(db, monkeypatch):
    fulltext.index_many("one", DOCS)
    assert _ranked("one", "rare common word3") == bm25.rank(DOCS, "rare common word3", 4)
    reads = _spy_reads(monkeypatch)
    assert _ranked("one", "rare common word3") == bm25.rank(DOCS, "rare common word3", 4)
    assert reads == [derived._NAMESPACE_SQL]


def test_a_write_retires_the_copy_and_the_next_search_sees_it(db):
    fulltext.index_many("w", DOCS)
    _ranked("w", "rare word1")
    fulltext.index("w", "zzz", "rare rare rare word1")
    fulltext.remove("w", "d000")
    now = [d for d in DOCS if d[0] != "d000"] + [("zzz", "rare rare rare word1")]
    assert _ranked("w", "rare word1") == bm25.rank(now, "rare word1", 4)
    assert _ranked("w", "rare word1")[0][0] == "zzz"


def test_a_copy_made_inside_a_rolled_back_transaction_is_never_used(db):
    fulltext.index_many("rb", DOCS)
    with transaction.atomic():
        fulltext.index("rb", "ghost", "rare rare rare rare")
        assert _ranked("rb", "rare", 1)[0][0] == "ghost"  # the copy is of this state
        transaction.set_rollback(True)
    assert _ranked("rb", "rare") == bm25.rank(DOCS, "rare", 4)
    fulltext.index("rb", "other", "rare")  # a committed state after it
    assert _ranked("rb", "rare") == bm25.rank([*DOCS, ("other", "rare")], "rare", 4)


@pytest.mark.parametrize("moved_at", ["_blocks", "_refs"])
def test_a_namespace_written_during_a_search_is_answered_from_one_snapshot(
    db, monkeypatch, moved_at
):
    query = "rare common word5"
    fulltext.index_many("mv", DOCS)
    _ranked("mv", "common")  # the copy knows "common": a search of the query reads twice
    fulltext.index("mv", "d000", "common")  # (a new revision: the copy is retired)
    changed = [("new", "rare rare rare common word5")]
    calls, original = [], getattr(derived, moved_at)

    def write_first(*args):  # another writer commits between two statements of the search
        calls.append(args)
        if len(calls) == (2 if moved_at == "_blocks" else 1):
            fulltext.index_many("mv", changed)
        return original(*args)

    monkeypatch.setattr(derived, moved_at, write_first)
    before = [("d000", "common"), *DOCS[1:]]
    hits = _ranked("mv", query)
    assert hits in (bm25.rank(before, query, 4), bm25.rank(before + changed, query, 4))
    assert len(calls) == (2 if moved_at == "_blocks" else 1)  # the write did fall in between
    monkeypatch.setattr(derived, moved_at, original)
    assert _ranked("mv", query) == bm25.rank(before + changed, query, 4)


def test_a_copy_over_its_budget_starts_over_and_stays_exact(db, settings, monkeypatch):
    fulltext.index_many("b", DOCS)
    settings.LOOPX_FULLTEXT_CACHE_MB = 0  # off: the snapshot path answers
    reads = _spy_reads(monkeypatch)
    assert _ranked("b", "common word2") == bm25.rank(DOCS, "common word2", 4)
    assert reads == []
    monkeypatch.setattr(derived, "budget", lambda: 1)  # every load is over it
    for query in ["common word2", "word4 rare", "word6 common word1"]:
        assert _ranked("b", query) == bm25.rank(DOCS, query, 4)
    assert reads


def test_the_budget_holds_over_every_namespace_copy(db, monkeypatch):
    fulltext.index_many("first", DOCS)
    fulltext.index_many("second", DOCS[:50])
    _ranked("first", "common word2 rare")
    (held,) = [c for k, c in derived._copies.items() if k[-1] == "first"]
    monkeypatch.setattr(derived, "budget", lambda: held.bytes + 1)  # no room for another
    assert _ranked("second", "common word2 rare") == bm25.rank(DOCS[:50], "common word2 rare", 4)
    assert [k[-1] for k in derived._copies] == ["second"]
    assert _ranked("first", "common word2 rare") == bm25.rank(DOCS, "common word2 rare", 4)
