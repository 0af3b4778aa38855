"""Hybrid recall cost: ``LocalProvider.rank`` with ``ranking="hybrid"`` against the
lexical ranking on the same namespace, at N documents built from the real-text relevance
set (``bench/relevance_real``: two records' texts and a few stray words per document),
alternating query by query. Prints one JSON line:
p50/p95 milliseconds of wall time per query for each ranking, the first (cold) hybrid
query apart (it loads the namespace's vectors), and the load average.

    python bench/hybrid_bench.py --records 100000 --queries 200
"""

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import django_on_temp_db, durability, percentile, progress_bar

SET = Path(__file__).resolve().parent / "relevance_real"


def _texts(n: int, rng: random.Random) -> list[str]:
    base = [json.loads(line)["text"] for line in (SET / "records.jsonl").read_text().splitlines()]
    words = " ".join(base).split()
    # two different records' instructions and a few stray words: 100k documents that
    # are not 270 near-copies of each record (which would make every query's ceiling
    # ties, an artefact no real corpus has)
    return [
        f"{rng.choice(base)} {rng.choice(base)} {' '.join(rng.sample(words, 4))}" for _ in range(n)
    ]


def _build(n: int, rng: random.Random):
    from django.db import transaction

    from loopx_site.core import clock
    from loopx_site.engines import embeddings, fulltext
    from reward_memory.models import LocalProviderDocument
    from reward_memory.providers import base, local

    binding = base.Binding(provider_id="local", scope_ref="bench:hybrid")
    texts = _texts(n, rng)
    ns = local.namespace(binding, "bench")
    now = clock.now()
    started = time.perf_counter()
    step = 5000
    with progress_bar(total=n, desc="documents", unit="doc") as bar:
        for lo in range(0, n, step):
            chunk = texts[lo : lo + step]
            vectors = embeddings.embed(chunk)
            with transaction.atomic():
                LocalProviderDocument.objects.bulk_create(
                    LocalProviderDocument(
                        scope_key=binding.scope_key, resource_ref=f"doc-{lo + i:07d}",
                        surface="bench", content=text, content_digest="sha256:" + "0" * 64,
                        recallable=True, embedding=embeddings.to_bytes(vectors[i]),
                        created_at=now, updated_at=now,
                    )
                    for i, text in enumerate(chunk)
                )  # fmt: skip
                fulltext.index_many(ns, ((f"doc-{lo + i:07d}", t) for i, t in enumerate(chunk)))
            bar.update(len(chunk))
    return binding, time.perf_counter() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--limit", type=int, default=4)
    args = parser.parse_args(argv)
    django_on_temp_db()
    from reward_memory.providers.local import LocalProvider

    rng = random.Random(32)
    binding, build_s = _build(args.records, rng)
    queries = [
        json.loads(line)["query"]
        for name in ("queries_tuning.jsonl", "queries_heldout.jsonl")
        for line in (SET / name).read_text().splitlines()
    ]
    provider = LocalProvider()
    times = {"lexical": [], "hybrid": []}
    started = time.perf_counter()
    provider.rank(binding, surface="bench", query=queries[0], limit=args.limit, ranking="hybrid")
    cold_ms = (time.perf_counter() - started) * 1e3
    for i in range(args.queries):
        query = queries[i % len(queries)]
        for ranking in ("lexical", "hybrid") if i % 2 else ("hybrid", "lexical"):
            t = time.perf_counter()
            provider.rank(binding, surface="bench", query=query, limit=args.limit, ranking=ranking)
            times[ranking].append((time.perf_counter() - t) * 1e3)
    print(
        json.dumps(
            {
                "bench": "hybrid_recall_rank",
                "records": args.records,
                "queries": args.queries,
                "limit": args.limit,
                "build_s": round(build_s, 1),
                "hybrid_cold_ms": round(cold_ms, 1),
                **{
                    f"{name}_p{int(q * 100)}_ms": round(percentile(values, q), 2)
                    for name, values in times.items()
                    for q in (0.5, 0.95)
                },
                "loadavg_1m": round(os.getloadavg()[0], 2),
                "database": durability(),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
