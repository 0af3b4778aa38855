"""The bounded-work path this app added to the kernel's SQLite full-text search (common
tokens dropped when selective ones exist; newest-pool ranking when all are common)."""

import pytest
from django.db import connection

from loopx_site.core import fulltext

pytestmark = pytest.mark.skipif(
    connection.vendor != "sqlite", reason="the bounded path is the SQLite FTS5 branch"
)


@pytest.fixture
def small_pool(db, monkeypatch):
    monkeypatch.setattr(fulltext, "POOL", 3)
    for i in range(6):
        fulltext.index("ns", f"common-{i}", f"review the patch number{i}")
    fulltext.index("ns", "rare", "review flaky retry")
    fulltext.index("other", "elsewhere", "flaky flaky flaky")


def test_selective_tokens_decide_when_present(small_pool):
    hits = fulltext.search("ns", "review flaky", limit=5)
    assert [h.ref for h in hits] == ["rare"]


def test_absent_tokens_do_not_hide_common_matches(small_pool):
    hits = fulltext.search("ns", "review nonexistentword", limit=10)
    assert len(hits) == 3  # the newest POOL matches of the common token
    assert {h.ref for h in hits} <= {f"common-{i}" for i in range(6)} | {"rare"}


def test_all_common_queries_rank_the_newest_pool(small_pool):
    hits = fulltext.search("ns", "review the patch", limit=10)
    assert {h.ref for h in hits} == {"common-4", "common-5", "rare"}


def test_namespaces_stay_isolated_on_the_bounded_path(small_pool):
    assert [h.ref for h in fulltext.search("other", "flaky review", limit=5)] == ["elsewhere"]
