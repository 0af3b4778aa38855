"""Our full-text engine beside Tantivy: the same corpus, the same tokens, the same BM25.

The corpus is ``reward_memory_bench``'s (Zipf-weighted domain words with stop words,
9–16 words a record, seeded) grown to each size in turn. Our engine indexes the records'
text (``fulltext.index_many``, batches of 5,000, in the database); Tantivy (PyPI
``tantivy``, a bench-only dependency: ``pip install tantivy==0.25.1``) indexes the tokens
our analyzer produces (``bm25.ENGLISH.document_tokens``) joined by spaces, in a text
field with Tantivy's ``whitespace`` tokenizer, so both see the same terms, tf and lengths.
Tantivy's BM25 uses k1 = 1.2, b = 0.75 and idf = ln(1 + (N − df + 0.5) / (df + 0.5)),
as ours does; it computes in 32-bit floats and keeps document lengths as a one-byte code
(exact for the lengths of this corpus, ≤ 16 tokens).

Queries are ``reward_memory_bench``'s (3–7 words drawn like the records), each run as
the disjunction (``Should``) of its distinct analysed tokens, top ``--limit`` (4, what the
service ranks). The two engines alternate query by query (which one goes first
alternates too), after a warm-up. Both sides' timed call includes analysing the query
with our analyzer (ours inside ``search``; for Tantivy, building its term queries from
our tokens), so both do the same work. Each call is timed in the calling thread's CPU time
(``time.thread_time``: the machine's other load does not inflate it; on PostgreSQL the
server's CPU is not in it, so the wall time is printed beside) and wall time. Our search
returns refs (it reads them in the same snapshot); Tantivy's call is ``searcher.search``
alone, its stored refs fetched outside the timing, so its side of the ratio is the
cheaper one.

Build: ours is the CPU time of ``index_many`` over the records (analysis included);
Tantivy's is the CPU time of analysing the records with our analyzer (also printed
alone, ``analysis_cpu_s``), adding them and committing with one indexing thread, its
merges waited for (process CPU, so the merge threads count). Both grow incrementally
from one size to the next; the figures are cumulative.

Exactness: every query's top-k from each engine is compared with the exact reference
(``reward_memory_bench.LeanReference``, tested equal to ``bm25.Reference``) — refs in
order. ``overlap`` is mean |A ∩ B| / k; ``same_order`` the share of queries with the same
refs in the same order. Prints one JSON line (``bench": "fulltext_vs_tantivy``).

Usage: .venv/bin/python bench/tantivy_bench.py [--sizes 10000,100000,1000000]
[--queries 200] [--limit 4] [--no-copy]
"""

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

from _setup import django_on_temp_db, durability, percentile
from reward_memory_bench import LeanReference, sentence, vocabulary

BATCH = 5000
NAMESPACE = "bench:tantivy"


def tantivy_index(folder: str):
    import tantivy

    builder = tantivy.SchemaBuilder()
    builder.add_integer_field("ref", stored=True, indexed=False, fast=False)
    builder.add_text_field("body", stored=False, tokenizer_name="whitespace")
    schema = builder.build()
    return tantivy, schema, tantivy.Index(schema, path=folder)


class Engines:
    """Both engines over one growing corpus, and the exact reference beside them."""

    def __init__(self, folder: str):
        from loopx_site.engines import fulltext
        from loopx_site.engines.fulltext import bm25

        self.fulltext, self.bm25 = fulltext, bm25
        self.tantivy, self.schema, self.index = tantivy_index(folder)
        self.reference = LeanReference()
        self.size = 0
        self.build = {"ours_cpu_s": 0.0, "ours_wall_s": 0.0, "tantivy_cpu_s": 0.0}
        self.build["tantivy_wall_s"] = self.build["analysis_cpu_s"] = 0.0

    def grow(self, size: int, rng, words, weights) -> None:
        records = [
            sentence(rng, words, weights, rng.randint(9, 16)) for _ in range(size - self.size)
        ]
        first = self.size
        for i, body in enumerate(records, start=first):
            self.reference.add(i, body)
        cpu, wall = time.process_time(), time.perf_counter()
        for lo in range(0, len(records), BATCH):
            chunk = records[lo : lo + BATCH]
            self.fulltext.index_many(
                NAMESPACE, [(f"{first + lo + j:08d}", body) for j, body in enumerate(chunk)]
            )
        self.build["ours_cpu_s"] += time.process_time() - cpu
        self.build["ours_wall_s"] += time.perf_counter() - wall
        cpu, wall = time.process_time(), time.perf_counter()
        tokens = self.bm25.ENGLISH.document_tokens
        analysed = [" ".join(tokens(body)) for body in records]
        self.build["analysis_cpu_s"] += time.process_time() - cpu
        writer = self.index.writer(heap_size=256 << 20, num_threads=1)
        for i, text in enumerate(analysed, start=first):
            writer.add_document(self.tantivy.Document(ref=i, body=text))
        writer.commit()
        writer.wait_merging_threads()
        self.build["tantivy_cpu_s"] += time.process_time() - cpu
        self.build["tantivy_wall_s"] += time.perf_counter() - wall
        self.index.reload()
        self.searcher = self.index.searcher()
        self.size = size

    def tantivy_query(self, query: str):
        t = self.tantivy
        clauses = [
            (t.Occur.Should, t.Query.term_query(self.schema, "body", token))
            for token in self.bm25.query_tokens(query)
        ]
        return t.Query.boolean_query(clauses)

    def tantivy_refs(self, hits) -> list[int]:
        return [self.searcher.doc(address)["ref"][0] for _, address in hits]


def measure(engines: Engines, queries: list[str], limit: int) -> dict:
    search, searcher = engines.fulltext.search, engines.searcher
    for q in queries[:10]:  # warm-up
        search(NAMESPACE, q, limit=limit)
        searcher.search(engines.tantivy_query(q), limit)
    cpu = {"ours": [], "tantivy": []}
    wall = {"ours": [], "tantivy": []}
    found = {"ours": [], "tantivy": []}
    scores = {"ours": [], "tantivy": []}

    def ours(q):
        w, c = time.perf_counter(), time.thread_time()
        hits = search(NAMESPACE, q, limit=limit)
        cpu["ours"].append((time.thread_time() - c) * 1000)
        wall["ours"].append((time.perf_counter() - w) * 1000)
        found["ours"].append([int(h.ref) for h in hits])
        scores["ours"].append([h.score for h in hits])

    def theirs(q):
        w, c = time.perf_counter(), time.thread_time()
        hits = searcher.search(engines.tantivy_query(q), limit).hits
        cpu["tantivy"].append((time.thread_time() - c) * 1000)
        wall["tantivy"].append((time.perf_counter() - w) * 1000)
        found["tantivy"].append(engines.tantivy_refs(hits))
        scores["tantivy"].append([score for score, _ in hits])

    for i, q in enumerate(queries):
        for run in (ours, theirs) if i % 2 == 0 else (theirs, ours):
            run(q)
    exact = [engines.reference.rank(q, limit) for q in queries]
    out = {"load_average_1m": round(os.getloadavg()[0], 2)}
    for name in ("ours", "tantivy"):
        out[name] = {
            "cpu_p50_ms": round(statistics.median(cpu[name]), 4),
            "cpu_p95_ms": round(percentile(cpu[name], 0.95), 4),
            "wall_p50_ms": round(statistics.median(wall[name]), 4),
            "wall_p95_ms": round(percentile(wall[name], 0.95), 4),
            **agreement(found[name], exact, limit),
        }
    out["engines_agree"] = agreement(found["ours"], found["tantivy"], limit)
    out["engines_agree"]["same_scores"] = same_scores(scores["ours"], scores["tantivy"])
    for q in ("cpu_p50_ms", "cpu_p95_ms", "wall_p50_ms", "wall_p95_ms"):
        out[q.replace("_ms", "_ratio")] = round(out["ours"][q] / out["tantivy"][q], 2)
    return out


def agreement(found: list[list[int]], expected: list[list[int]], limit: int) -> dict:
    overlap = [
        len(set(a) & set(b)) / min(limit, len(b)) if b else float(not a)
        for a, b in zip(found, expected, strict=True)
    ]
    same = sum(a == b for a, b in zip(found, expected, strict=True))
    return {
        "overlap": round(statistics.mean(overlap), 4),
        "same_order": round(same / len(found), 4),
    }


def same_scores(ours: list[list[float]], theirs: list[list[float]]) -> float:
    """Share of queries whose k scores agree rank by rank within Tantivy's precision
    (32-bit floats: relative 1e-6): where the refs differ but the scores agree, the
    engines differ only in which of equal-scoring documents they keep."""
    agree = sum(
        len(a) == len(b) and all(abs(x - y) <= 1e-6 * max(x, y) for x, y in zip(a, b, strict=True))
        for a, b in zip(ours, theirs, strict=True)
    )
    return round(agree / len(ours), 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--limit", type=int, default=4)
    parser.add_argument(
        "--no-copy", action="store_true", help="rank without the process's copy (snapshot path)"
    )
    args = parser.parse_args()
    sizes = sorted(int(n) for n in args.sizes.split(","))
    django_on_temp_db()
    from django.conf import settings

    if args.no_copy:
        settings.LOOPX_FULLTEXT_CACHE_MB = 0
    import tantivy
    from django.db import connection

    from loopx_site.engines import heap

    folder = tempfile.mkdtemp(prefix="loopx-tantivy-")
    try:
        rng = random.Random(20261201)
        words, weights = vocabulary(rng)
        queries = [sentence(rng, words, weights, rng.randint(3, 7)) for _ in range(args.queries)]
        engines = Engines(folder)
        heap.freeze()  # as a server process does once loaded
        results, builds = {}, {}
        for size in sizes:
            engines.grow(size, rng, words, weights)
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:  # what autovacuum would have done
                    cursor.execute("VACUUM ANALYZE")
            builds[str(size)] = {k: round(v, 1) for k, v in engines.build.items()}
            builds[str(size)]["cpu_ratio"] = round(
                engines.build["ours_cpu_s"] / engines.build["tantivy_cpu_s"], 2
            )
            results[str(size)] = measure(engines, queries, args.limit)
            print(f"{size}: build {builds[str(size)]} {results[str(size)]}", file=sys.stderr)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    line = {
        "bench": "fulltext_vs_tantivy",
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "backend": connection.vendor,
        "durability": durability(),
        "tantivy": getattr(tantivy, "__version__", "?"),
        "sizes": sizes,
        "queries": args.queries,
        "limit": args.limit,
        "copy": not args.no_copy,
        "build": builds,
        "search": results,
        "targets": {"cpu_ratio": "<= 2", "build_ratio": "<= 3", "overlap": "1.00 with exact"},
    }
    print(json.dumps(line, sort_keys=True))


if __name__ == "__main__":
    main()
