"""What one recall costs the database, and that the cheaper path answers the same.

A ``local`` recall runs three statements of its own besides the ranking (the context
read, the records with the provider's bytes, the receipt INSERT); the fused read of the
provider's documents and the records answers exactly what ``LocalProvider.recall`` plus
the records read answer; an identical recall that lost the race to the receipt answers
from the stored one. Runs on SQLite and PostgreSQL (the suite's second leg)."""

import datetime as dt
import json
import threading

import pytest
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext

from loopx_site.core import clock
from loopx_site.engines import fulltext
from reward_memory import providers, selectors, services
from reward_memory.documents import recall as recall_documents
from reward_memory.domain.recall_request import parse_recall
from reward_memory.models import Corpus, LocalProviderDocument, MemoryRecord, RecallReceipt
from reward_memory.providers import local
from reward_memory.services import recalls
from tests.reward_memory import factories as f
from tests.reward_memory.test_recall import SUMMARIES as FIRST_SUMMARIES
from tests.reward_memory.test_recall import _activate

SUMMARIES = [
    *FIRST_SUMMARIES,
    "Name the failing test in the PR description.",
    "Quote the PR description effect for reviewers.",
    "Link the issue from the PR description effect line.",
]
QUERY = "PR description effect"


@pytest.fixture
def refs(corpus):
    return [_activate(s, f"ev-{i}") for i, s in enumerate(SUMMARIES)]


def _own(captured) -> list[str]:
    """The statements that are not the ranking's (``loopx_site.engines.fulltext``)."""
    return [q["sql"] for q in captured if "core_search" not in q["sql"]]


def test_a_local_recall_runs_three_statements_of_its_own(db, corpus, refs):
    request = f.recall_request(corpus, queries=[QUERY])
    with CaptureQueriesContext(connection) as ctx:
        result = f.recalled(request=request, execute=True)
    assert result["status"] == "ok"
    assert len(result["items"]) == 4
    own = _own(ctx.captured_queries)
    assert len(own) == 3, own
    assert own[0].startswith("SELECT a.id, a.goal_id")  # agent, corpus, replay flag
    assert "reward_memory_localproviderdocument" in own[1]  # the bytes with the records
    assert own[2].startswith('INSERT INTO "reward_memory_recallreceipt"')
    assert RecallReceipt.objects.get().packet == result["public_packet"]


def test_a_refused_recall_reads_once_and_writes_nothing(db, corpus, refs):
    request = f.recall_request(corpus, queries=[QUERY], conflicts=["open"])
    with CaptureQueriesContext(connection) as ctx:
        result = f.recalled(request=request, execute=True)
    assert result["status"] == "guard_blocked"
    assert len(ctx.captured_queries) == 1
    assert not RecallReceipt.objects.exists()


def _both_paths(corpus, query=QUERY, limit=4):
    """``_accept`` over ``LocalProvider.recall``'s items and over ``rank`` + the fused
    read, for the same request."""
    request, _ = parse_recall(f.recall_request(corpus, queries=[query], limit=limit))
    binding = selectors.provider_binding(corpus)
    provider = providers.get("local")
    now = clock.now()
    n = min(limit * recalls.OVERFETCH, 50)
    items = provider.recall(binding, surface=request.surface, query=query, limit=n)
    ranked = provider.rank(binding, surface=request.surface, query=query, limit=n)
    plain = recalls._accept(corpus, request, [items], now)
    fused = recalls._accept(corpus, request, [ranked], now, binding.scope_key)
    return plain, fused


def _same(plain, fused):
    (plain_records, plain_filtered), (fused_records, fused_filtered) = plain, fused
    assert [r.record_ref for r in fused_records] == [r.record_ref for r in plain_records]
    assert fused_filtered == plain_filtered
    for a, b in zip(plain_records, fused_records, strict=True):
        for name in selectors.RESULT_COLUMNS:
            assert getattr(a, name) == getattr(b, name), name
        assert a.readable is b.readable is True


def test_the_fused_read_answers_what_the_provider_and_the_records_answer(db, corpus, refs):
    plain, fused = _both_paths(corpus)
    _same(plain, fused)
    assert len(fused[0]) == 4
    assert sum(fused[1].values()) == 0


def test_the_fused_read_drops_tampered_bytes_and_counts_them(db, corpus, refs):
    first = _both_paths(corpus)[1][0][0]
    doc = LocalProviderDocument.objects.get(resource_ref=first.provider_resource_ref)
    LocalProviderDocument.objects.filter(pk=doc.pk).update(content=doc.content + " ")
    plain, fused = _both_paths(corpus)
    _same(plain, fused)
    assert fused[1]["readback_mismatch"] == 1
    assert first.record_ref not in [r.record_ref for r in fused[0]]
    assert len(fused[0]) == 4  # the second statement read the refs past the first four


def test_the_fused_read_skips_documents_no_longer_recallable(db, corpus, refs):
    first = _both_paths(corpus)[1][0][0]
    # still in the full-text index, but the provider no longer returns it
    LocalProviderDocument.objects.filter(resource_ref=first.provider_resource_ref).update(
        recallable=False
    )
    plain, fused = _both_paths(corpus)
    _same(plain, fused)
    assert first.record_ref not in [r.record_ref for r in fused[0]]
    assert sum(fused[1].values()) == 0  # not an item, so not a filtered one either


def test_the_fused_read_counts_a_document_without_a_record_as_unknown(db, corpus, refs):
    binding = selectors.provider_binding(corpus)
    surface = corpus.surfaces[0]
    stray = local.LocalProvider().resource_ref(binding, surface=surface, key="stray")
    now = clock.now()
    LocalProviderDocument.objects.create(
        scope_key=binding.scope_key,
        resource_ref=stray,
        surface=surface,
        content="{}",
        content_digest=local.content_digest(b"{}"),
        recallable=True,
        created_at=now,
        updated_at=now,
    )
    fulltext.index(local.namespace(binding, surface), stray, "PR description effect effect")
    plain, fused = _both_paths(corpus)
    _same(plain, fused)
    assert fused[1]["unknown"] == 1


def test_the_fused_read_filters_retired_and_expired_like_the_records_read(db, corpus, refs):
    records = _both_paths(corpus)[1][0]
    MemoryRecord.objects.filter(record_ref=records[0].record_ref).update(lifecycle_state="retired")
    MemoryRecord.objects.filter(record_ref=records[1].record_ref).update(
        expires_at=clock.now() - dt.timedelta(seconds=1)
    )
    plain, fused = _both_paths(corpus, limit=6)
    _same(plain, fused)
    assert fused[1]["not_active"] == 1
    assert fused[1]["expired"] == 1


def _ranked_first(corpus, queries, limit):
    """``_accept_ranked`` (the first ``limit`` ranked first, widened when needed) and
    ``_accept`` over the wide rankings, for the same request; and the ranking widths
    the first asked for."""
    request, _ = parse_recall(f.recall_request(corpus, queries=queries, limit=limit))
    binding = selectors.provider_binding(corpus)
    provider = providers.get("local")
    now = clock.now()
    wide = min(limit * recalls.OVERFETCH, 50)
    widths = []

    def rank(n):
        widths.append(n)
        return [provider.rank(binding, surface=request.surface, query=q, limit=n) for q in queries]

    lazy = recalls._accept_ranked(corpus, request, rank, wide, now, binding.scope_key)
    ranked = [provider.rank(binding, surface=request.surface, query=q, limit=wide) for q in queries]
    return lazy, recalls._accept(corpus, request, ranked, now, binding.scope_key), widths


@pytest.mark.parametrize(
    ("queries", "limit", "retire", "widths"),
    [
        ([QUERY], 4, 0, [4]),  # the first four are accepted: nothing more is ranked
        ([QUERY], 4, 1, [4, 16]),  # one of them is filtered: ranked wide, as ever
        ([QUERY], 2, 1, [2, 8]),
        ([QUERY, "validation commands"], 4, 0, [4]),
        ([QUERY, "validation commands"], 4, 2, [4, 16]),
        (["twenty lines", QUERY], 4, 1, [4, 16]),
        (["twenty lines", QUERY], 4, 0, [4]),  # the first query's one match, then three more
        (["twenty lines", "validation commands"], 4, 0, [4]),  # every match is there
        (["no such words", QUERY], 4, 0, [4]),
    ],
)
def test_ranking_the_first_limit_first_answers_what_the_wide_ranking_answers(
    db, corpus, refs, queries, limit, retire, widths
):
    for record in _ranked_first(corpus, queries, limit)[1][0][:retire]:
        MemoryRecord.objects.filter(record_ref=record.record_ref).update(lifecycle_state="retired")
    lazy, wide, asked = _ranked_first(corpus, queries, limit)
    _same(wide, lazy)
    assert asked == widths
    assert wide[1]["not_active"] == (retire if widths[-1] > limit else 0)


def test_a_recall_that_lost_the_race_to_its_receipt_answers_from_the_stored_one(db, corpus, refs):
    request = f.recall_request(corpus, queries=[QUERY])
    outcome = services.recall(request=request, execute=True)
    first = recall_documents.recall_result(outcome)
    parsed, _ = parse_recall(request)
    context = selectors.recall_context("demo", "author", corpus.corpus_id, first["recall_id"])
    with transaction.atomic():  # inside a caller's transaction: no error, no savepoint
        again = recall_documents.recall_result(recalls._store(parsed, corpus, context, outcome))
        assert RecallReceipt.objects.count() == 1  # the transaction is still usable
    assert again["replayed"] is True
    assert [i["memory_ref"] for i in again["items"]] == [i["memory_ref"] for i in first["items"]]


@pytest.mark.django_db(transaction=True)
def test_racing_identical_recalls_store_one_receipt(agents):
    corpus = f.register("prefs", agents=[("demo", "author")])
    for i, s in enumerate(SUMMARIES):
        _activate(s, f"ev-{i}")
    request = f.recall_request(corpus, queries=[QUERY])
    n = 6
    barrier = threading.Barrier(n)
    results, errors = [], []

    def run():
        try:
            barrier.wait(timeout=30)
            results.append(f.recalled(request=request, execute=True))
        except Exception as exc:  # surfaced below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert len(results) == n
    assert RecallReceipt.objects.count() == 1
    same = {json.dumps([i["memory_ref"] for i in r["items"]]) for r in results}
    assert len(same) == 1
    assert {r["recall_id"] for r in results} == {RecallReceipt.objects.get().recall_id}
    assert Corpus.objects.get(corpus_id="prefs").recalls.count() == 1
