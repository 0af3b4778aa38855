"""Reward Memory recall with the ``local`` provider at 1k / 10k / 100k active records in
one corpus (another corpus of 10k records present): exactness and latency.

Sets up Django on a throwaway SQLite database (unless DATABASE_URL is set), registers two
soft_preference corpora through the real service, bulk-loads active records exactly as
the ingest pipeline stores them (record row, local provider document with the canonical
content bytes, full-text index entry), growing the measured corpus 1k → 10k → 100k.
At each size, for natural-language queries drawn from the corpus vocabulary
(Zipf-weighted, stop words included), it alternates call by call:

- ``reward_memory.services.recall(execute=True)`` — guards, ranking, exact byte readback,
  lifecycle filter and the receipt write (the service figure; the statements one recall
  runs besides the ranking's, counted on the warm-up calls, are ``service_statements``);
- ``loopx_site.engines.fulltext.search`` alone, for the 4 hits the service ranks first (the
  ranking's share; the heap frozen before timing, as the app server freezes its own);

The service's own time is also taken inside each recall (``own``): its time outside the
ranking call it makes — guards, readback, filter, receipt — which no order of the pair
can shift. The service's top-4 is compared with the exact BM25 top-4 computed by the
reference (``loopx_site.engines.fulltext.bm25.Reference``) over the same records. Prints one
JSON line: overlap (mean |service ∩ exact| / 4), exact-#1 rate, p50/p95 per size (wall,
and the thread's CPU time, which the machine's other load does not inflate), durability
settings. Targets: overlap 1.00 at every size; p95 ≤ 30 ms at 1M. On PostgreSQL each
bulk load is followed by ``VACUUM ANALYZE`` (what autovacuum would have done by then).

Usage: .venv/bin/python bench/reward_memory_bench.py [--quick] [--sizes 1000,10000]
[--queries N] (``--quick``: 1k / 5k / 20k, for a fast check).
"""

import argparse
import collections
import itertools
import json
import os
import random
import resource
import statistics
import sys
import time
from pathlib import Path

from _setup import django_on_temp_db, durability, percentile

STOP_TEXT = "the a to of and in for with on when before after is be this that it"
DOMAIN_TEXT = (
    "pr description review test tests validation command commands todo turn quota patch "
    "reviewer maintainer issue fix summary effect user visible change storage contract "
    "reproduction failing flaky retry timeout release branch merge rebase commit message "
    "changelog docs documentation benchmark latency regression api schema migration "
    "database index query cache lock transaction rollback deploy config setting flag "
    "feature experiment recall memory preference policy scope surface module boundary "
    "owner contributor evidence artifact revision checkout lint format type error "
    "warning log trace metric alert dashboard incident postmortem design proposal"
)


def words_of(text: str) -> list[str]:
    return text.split()


STOP = words_of(STOP_TEXT)
DOMAIN = words_of(DOMAIN_TEXT)


def vocabulary(rng: random.Random) -> tuple[list[str], list[float]]:
    words = DOMAIN + [f"term{i:04d}" for i in range(2500)]
    rng.shuffle(words)
    weights = [1.0 / (rank + 1) ** 1.05 for rank in range(len(words))]
    # ``choices(words, weights)`` accumulates the weights on every call; the cumulative
    # weights once give the same draws (it computes exactly these) at 1M records' pace
    return words, list(itertools.accumulate(weights))


def sentence(rng, words, weights, n) -> str:
    """``weights`` are cumulative (``vocabulary``)."""
    out = []
    for _ in range(n):
        if rng.random() < 0.3:
            out.append(rng.choice(STOP))
        else:
            out.append(rng.choices(words, cum_weights=weights)[0])
    text = " ".join(out)
    return text[0].upper() + text[1:] + "."


def register_corpus(corpus_id: str):
    from loopx_site.core import services as core
    from reward_memory import services
    from reward_memory.models import Corpus

    if corpus_id == "bench-prefs":
        core.register_goal(goal_id="bench", agent_ids=["agent"])
    corpus = {
        "schema_version": "reward_memory_corpus_v0",
        "corpus_id": corpus_id,
        "memory_class": "soft_preference",
        "owner": "user:owner",
        "reviewer": "user:reviewer",
        "authority_source": "repo:bench/maintainers",
        "maintenance": {"retirement_authority": "user:owner"},
        "project": "bench",
        "surfaces": ["issue_fix.pr_description"],
        "provider_binding": {"provider_id": "local", "scope_ref": f"local:{corpus_id}"},
        "agent_allowlist": [{"goal_id": "bench", "agent_id": "agent"}],
    }
    services.register_corpus(corpus=corpus, execute=True)
    return Corpus.objects.get(corpus_id=corpus_id)


class RawInsert:
    """``bulk_create`` of one model without the ORM's per-value work: the values that are
    the same in every row are prepared once by their fields (``get_db_prep_save``), the
    per-row ones by their own field, and the rows go in one ``executemany``. Identical
    rows to ``bulk_create`` at a tenth of its cost (1M records have to load in minutes)."""

    def __init__(self, template, dynamic: tuple[str, ...]):
        from django.db import connection

        self.model = type(template)
        self.fields = [f for f in self.model._meta.concrete_fields if not f.primary_key]
        self.dynamic = {f.attname: f for f in self.fields if f.attname in dynamic}
        self.constant = {
            f.attname: f.get_db_prep_save(getattr(template, f.attname), connection)
            for f in self.fields
        }
        qn = connection.ops.quote_name
        self.sql = (
            f"INSERT INTO {qn(self.model._meta.db_table)} "
            f"({', '.join(qn(f.column) for f in self.fields)}) "
            f"VALUES ({', '.join(['%s'] * len(self.fields))})"
        )

    def row(self, **values) -> tuple:
        from django.db import connection

        out = []
        for f in self.fields:
            if f.attname in values:
                out.append(self.dynamic[f.attname].get_db_prep_save(values[f.attname], connection))
            else:
                out.append(self.constant[f.attname])
        return tuple(out)

    def insert(self, rows: list[tuple]) -> None:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.executemany(self.sql, rows)


def bulk_load(corpus, start: int, stop: int, rng, words, weights, sink=None) -> None:
    """Rows identical in shape to what the ingest pipeline writes (no per-row pipeline).
    ``sink(i, summary)`` sees each record (the exact reference's index)."""
    from django.db import transaction

    from loopx_site.core import clock
    from loopx_site.core.canonical import canonical_bytes, digest_ref
    from loopx_site.engines import fulltext
    from reward_memory import selectors
    from reward_memory.models import LocalProviderDocument, MemoryRecord
    from reward_memory.providers import local

    now = clock.now()
    binding = selectors.provider_binding(corpus)
    provider = local.LocalProvider()
    namespace = local.namespace(binding, "issue_fix.pr_description")
    authority = {"kind": "advisory", "action_scopes": []}
    record_rows = RawInsert(
        MemoryRecord(
            corpus=corpus,
            memory_class="soft_preference",
            project="bench",
            surface="issue_fix.pr_description",
            content={},
            activation_basis="standing_policy",
            policy_digest="sha256:" + "0" * 64,
            writer="user:owner",
            source_kind="maintainer_feedback",
            source_actor="user:bench",
            observed_at=now,
            confidence_level="medium",
            authority=authority,
            lifecycle_state="active",
            provider_id="local",
            readback_verified_at=now,
            created_at=now,
            activated_at=now,
            state_changed_at=now,
        ),
        dynamic=(
            "record_ref",
            "candidate_ref",
            "summary",
            "content",
            "content_digest",
            "provider_resource_ref",
            "provider_ref_digest",
        ),
    )
    doc_rows = RawInsert(
        LocalProviderDocument(
            scope_key=binding.scope_key,
            surface="issue_fix.pr_description",
            recallable=True,
            created_at=now,
            updated_at=now,
        ),
        dynamic=("resource_ref", "content", "content_digest"),
    )
    batch = 5000
    from loopx_site.core.progress import bar

    batches = range(start, stop, batch)
    for lo in bar(batches, desc=f"load {stop:,} records", unit="batch", fmt="json"):
        records, docs, search = [], [], []
        for i in range(lo, min(stop, lo + batch)):
            summary = sentence(rng, words, weights, rng.randint(9, 16))
            candidate_ref, record_ref = refs_of(corpus.corpus_id, i)
            resource = provider.resource_ref(
                binding, surface="issue_fix.pr_description", key=f"{i:040d}"
            )
            content = {
                "schema_version": "reward_memory_provider_content_v0",
                "record_ref": record_ref,
                "corpus_id": corpus.corpus_id,
                "memory_class": "soft_preference",
                "candidate_ref": candidate_ref,
                "summary": summary,
                "scope": {"project": "bench", "surface": "issue_fix.pr_description"},
                "authority": authority,
                "confidence": {"level": "medium", "basis": "bench"},
            }
            digest = digest_ref(content)
            records.append(
                record_rows.row(
                    record_ref=record_ref,
                    candidate_ref=candidate_ref,
                    summary=summary,
                    content=content,
                    content_digest=digest,
                    provider_resource_ref=resource,
                    provider_ref_digest=digest_ref(resource),
                )
            )
            docs.append(
                doc_rows.row(
                    resource_ref=resource,
                    content=canonical_bytes(content).decode("utf-8"),
                    content_digest=digest,
                )
            )
            search.append((resource, summary))
            if sink is not None:
                sink(i, summary)
        with transaction.atomic():
            record_rows.insert(records)
            doc_rows.insert(docs)
            fulltext.index_many(namespace, search)


def refs_of(corpus_id: str, i: int) -> tuple[str, str]:
    """The candidate and record refs of bench record ``i`` (recomputed, not kept: 1M)."""
    from loopx_site.core.canonical import prefixed_id

    return (
        prefixed_id("cand_", {"bench": i, "corpus": corpus_id}),
        prefixed_id("rmr_", {"bench": i, "corpus": corpus_id}),
    )


class LeanReference:
    """``loopx_site.engines.fulltext.bm25.Reference`` over the measured corpus, for 1M records: the
    same analyzer, the same per-document sums in the same order (float64, query-term
    order), the same ties (by ref: the bench's refs sort as their index) — postings kept
    as compact arrays and scored with numpy instead of 10⁷ Python tuples. Tested equal to
    the reference on every query of a run (``--check-reference``)."""

    def __init__(self):
        from array import array

        from loopx_site.engines.fulltext import bm25

        self._array, self.bm25 = array, bm25
        self.lengths = array("H")
        self.total = 0
        self.postings: dict[str, tuple] = {}

    def add(self, i: int, body: str) -> None:
        assert i == len(self.lengths)
        words = self.bm25.ENGLISH.document_tokens(body)
        self.lengths.append(len(words))
        self.total += len(words)
        for term, tf in collections.Counter(words).items():
            docs = self.postings.get(term)
            if docs is None:
                docs = self.postings[term] = (self._array("i"), self._array("H"))
            docs[0].append(i)
            docs[1].append(tf)

    def rank(self, query: str, limit: int) -> list[int]:
        import numpy as np

        bm25 = self.bm25
        words = bm25.ENGLISH.query_tokens(query)
        n = len(self.lengths)
        if not n or not words or limit <= 0:
            return []
        avgdl = self.total / n
        lengths = np.frombuffer(self.lengths, dtype=np.uint16).astype(np.float64)
        scores = np.zeros(n)
        touched = np.zeros(n, dtype=bool)
        for word in words:
            docs, tfs = self.postings.get(word, (self._array("i"), self._array("H")))
            term_idf = bm25.idf(n, len(docs))
            if not len(docs):
                continue
            d = np.frombuffer(docs, dtype=np.int32)
            tf = np.frombuffer(tfs, dtype=np.uint16).astype(np.float64)
            dl = lengths[d]
            w = tf * bm25.K1_PLUS_1 / (tf + bm25.K1 * (bm25.ONE_MINUS_B + bm25.B * dl / avgdl))
            scores[d] += term_idf * w
            touched[d] = True
        cand = np.flatnonzero(touched)
        s = scores[cand]
        if len(cand) > limit:
            kth = np.partition(s, len(s) - limit)[len(s) - limit]
            keep = s >= kth
            cand, s = cand[keep], s[keep]
        order = np.lexsort((cand, -s))
        return [int(cand[j]) for j in order[:limit]]


def rss_mb() -> float:
    """Peak resident set of this process so far (``ru_maxrss``, KiB on Linux), MiB."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


#: what the service ranks for a recall of 4: the first 4 (16 only when some of those are
#: filtered, which no bench record is — ``services.recalls._accept_ranked``)
RANKED = 4


def measure(corpus, queries: list[str], tag: str, reference, check=None) -> dict:
    from django.db import connection

    from loopx_site.core import clock
    from loopx_site.engines import fulltext, heap
    from reward_memory import selectors, services
    from reward_memory.documents import recall as recall_documents
    from reward_memory.providers import local

    namespace = local.namespace(selectors.provider_binding(corpus), "issue_fix.pr_description")

    def request(i, q):
        return {
            "schema_version": "reward_memory_recall_request_v0",
            "goal_id": "bench",
            "agent_id": "agent",
            "corpus_id": corpus.corpus_id,
            "project": "bench",
            "surface": "issue_fix.pr_description",
            "mode": "function_boundary",
            "queries": [q],
            "limit": 4,
            "read_authority": {
                "checkpoint_ref": "allowlist:bench/agent",
                "verified": True,
                "corpus_id": corpus.corpus_id,
                "project": "bench",
                "surface": "issue_fix.pr_description",
                "scope": "read",
            },
            "freshness": {"observed_at": clock.iso(clock.now()), "corpus_revision": 1},
            "conflicts": [],
            "provider_binding_ref": corpus.provider_binding_ref,
            "request_id": f"{tag}-{i}",
        }

    statements = {"service": 0, "ranking": 0}

    def count(execute, sql, params, many, context):
        # (a search's snapshot is a transaction: on PostgreSQL its SET TRANSACTION too)
        ranking = "core_search" in sql or sql.startswith("SET TRANSACTION")
        statements["ranking" if ranking else "service"] += 1
        return execute(sql, params, many, context)

    for i, q in enumerate(queries[:10]):  # warm-up, counting the statements of a recall
        with connection.execute_wrapper(count):  # (not while timing: the wrapper costs)
            services.recall(request=request(f"w{i}", q), execute=True)
        fulltext.search(namespace, q, limit=RANKED)
    # the app server freezes its start-up heap once loaded (loopx_site.engines.heap); so
    # does this process, once loaded, so a collection visits what requests allocate
    heap.freeze()
    service, ranking, overlap, first, compared = [], [], [], 0, 0
    service_cpu, ranking_cpu, own = [], [], []
    search, inside = fulltext.search, [0.0]

    def timed_search(*args, **kwargs):  # the ranking the service itself calls
        started = time.perf_counter()
        try:
            return search(*args, **kwargs)
        finally:
            inside[0] += time.perf_counter() - started

    def run_service(i, q):
        inside[0] = 0.0
        fulltext.search = timed_search
        try:
            started, cpu = time.perf_counter(), time.thread_time()
            # the recall as an edge answers it: the service and its document
            recalled = services.recall(request=request(i, q), execute=True)
            result = recall_documents.recall_result(recalled)
            elapsed = time.perf_counter() - started
            service_cpu.append((time.thread_time() - cpu) * 1000)
        finally:
            fulltext.search = search
        service.append(elapsed * 1000)
        own.append((elapsed - inside[0]) * 1000)
        return result

    def run_ranking(q):
        started, cpu = time.perf_counter(), time.thread_time()
        fulltext.search(namespace, q, limit=RANKED)
        ranking.append((time.perf_counter() - started) * 1000)
        ranking_cpu.append((time.thread_time() - cpu) * 1000)

    for i, q in enumerate(queries):
        # service and ranking alternate call by call, and which goes first alternates too:
        # the second call of a pair finds the query's posting blocks in the page cache
        # (at 100k that alone made the service look ~1 ms dearer when it always went first)
        if i % 2:
            run_ranking(q)
            result = run_service(i, q)
        else:
            result = run_service(i, q)
            run_ranking(q)
        assert result["status"] in ("ok", "empty"), result["status"]
        got = [item["memory_ref"] for item in result["items"]]
        ranked = reference.rank(q, 4)
        if check is not None:  # the lean reference against the plain one, query by query
            assert [f"{i:040d}" for i in ranked] == [ref for ref, _ in check.rank(q, 4)], q
        exact = [refs_of(corpus.corpus_id, i)[1] for i in ranked]
        if exact:
            compared += 1
            overlap.append(len(set(got) & set(exact)) / len(exact))
            first += bool(got) and got[0] == exact[0]
    return {
        "overhead_p50_ms": round(
            statistics.median(a - b for a, b in zip(service, ranking, strict=True)), 3
        ),
        "overhead_cpu_p50_ms": round(
            statistics.median(a - b for a, b in zip(service_cpu, ranking_cpu, strict=True)), 3
        ),
        # the same overhead measured inside each recall: its time outside the ranking it
        # calls (guards, readback, receipt), free of which call of a pair went first
        "own_p50_ms": round(statistics.median(own), 3),
        "own_p95_ms": round(percentile(own, 0.95), 3),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "peak_rss_mb": rss_mb(),
        "p50_ms": round(statistics.median(service), 3),
        "p95_ms": round(percentile(service, 0.95), 3),
        "ranking_p50_ms": round(statistics.median(ranking), 3),
        "ranking_p95_ms": round(percentile(ranking, 0.95), 3),
        "cpu_p95_ms": round(percentile(service_cpu, 0.95), 3),
        "ranking_cpu_p95_ms": round(percentile(ranking_cpu, 0.95), 3),
        "overlap_top4": round(statistics.mean(overlap), 4) if overlap else None,
        "exact_first": f"{first}/{compared}",
        # per recall (mean of the warm-up's), besides and of the ranking's statements
        "service_statements": round(statements["service"] / min(10, len(queries)), 2),
        "ranking_statements": round(statements["ranking"] / min(10, len(queries)), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1k / 5k / 20k")
    parser.add_argument(
        "--sizes", help="comma-separated record counts (default 1000,10000,100000,1000000)"
    )
    parser.add_argument("--other", type=int, default=10000, help="records in another corpus")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--check-reference",
        action="store_true",
        help="also rank with loopx_site.engines.fulltext.bm25.Reference and assert the same top-4",
    )
    args = parser.parse_args()
    if args.sizes:
        sizes = sorted(int(n) for n in args.sizes.split(","))
    else:
        sizes = [1000, 5000, 20000] if args.quick else [1000, 10000, 100000, 1000000]

    tmp = django_on_temp_db()
    from django.db import connection

    from loopx_site.engines.fulltext import bm25

    rng = random.Random(20261201)
    words, weights = vocabulary(rng)
    corpus = register_corpus("bench-prefs")
    other = register_corpus("bench-other")
    bulk_load(other, 0, args.other, random.Random(7), words, weights)  # another corpus present
    queries = [sentence(rng, words, weights, rng.randint(3, 7)) for _ in range(args.queries)]

    reference, plain = LeanReference(), [] if args.check_reference else None

    def sink(i, summary):
        reference.add(i, summary)
        if plain is not None:
            plain.append((f"{i:040d}", summary))

    results, loaded, load_seconds = {}, 0, {}
    for size in sizes:
        started = time.perf_counter()
        bulk_load(corpus, loaded, size, rng, words, weights, sink)
        load_seconds[str(size)] = round(time.perf_counter() - started, 1)
        if connection.vendor == "postgresql":
            # PostgreSQL plans from table statistics that autovacuum refreshes in the
            # background; measured seconds after a bulk load they still describe the
            # smaller table (20k records: p95 141 ms on stale statistics, 13 ms after).
            # Autovacuum also reclaims the dead versions the load left behind (each
            # batch rewrites the last block of its terms). Measure the steady state a
            # deployment runs in: what autovacuum would have done by then, done now.
            with connection.cursor() as cursor:
                cursor.execute("VACUUM ANALYZE")
        loaded = size
        check = bm25.Reference(plain) if plain is not None else None
        results[str(size)] = measure(corpus, queries, f"n{size}", reference, check)
        print(f"{size} records: {results[str(size)]}", file=sys.stderr)

    line = {
        "bench": "reward_memory_recall_local",
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "backend": connection.vendor,
        "durability": durability(),
        "sizes": sizes,
        "other_corpus_records": args.other,
        "queries": args.queries,
        "overlap_top4": {k: v["overlap_top4"] for k, v in results.items()},
        "exact_first": {k: v["exact_first"] for k, v in results.items()},
        "p50_ms": {k: v["p50_ms"] for k, v in results.items()},
        "p95_ms": {k: v["p95_ms"] for k, v in results.items()},
        "ranking_p50_ms": {k: v["ranking_p50_ms"] for k, v in results.items()},
        "ranking_p95_ms": {k: v["ranking_p95_ms"] for k, v in results.items()},
        "overhead_p50_ms": {k: v["overhead_p50_ms"] for k, v in results.items()},
        "overhead_cpu_p50_ms": {k: v["overhead_cpu_p50_ms"] for k, v in results.items()},
        "own_p50_ms": {k: v["own_p50_ms"] for k, v in results.items()},
        "own_p95_ms": {k: v["own_p95_ms"] for k, v in results.items()},
        "cpu_p95_ms": {k: v["cpu_p95_ms"] for k, v in results.items()},
        "ranking_cpu_p95_ms": {k: v["ranking_cpu_p95_ms"] for k, v in results.items()},
        "load_average_1m_by_size": {k: v["load_average_1m"] for k, v in results.items()},
        "service_statements": {k: v["service_statements"] for k, v in results.items()},
        "ranking_statements": {k: v["ranking_statements"] for k, v in results.items()},
        "peak_rss_mb": {k: v["peak_rss_mb"] for k, v in results.items()},
        "load_average_1m": round(os.getloadavg()[0], 2),
        "targets": {"overlap_top4": 1.0, "p95_ms_at_largest": 30, "overhead_p50_ms": 3},
        "meets_targets": results[str(sizes[-1])]["p95_ms"] <= 30
        and all(v["overlap_top4"] in (None, 1.0) for v in results.values())
        and all(v["overhead_p50_ms"] <= 3 for v in results.values()),
        "load_seconds": load_seconds,
    }
    print(json.dumps(line))
    if tmp is not None:
        for suffix in ("", "-wal", "-shm"):
            Path(str(tmp) + suffix).unlink(missing_ok=True)


if __name__ == "__main__":
    main()
