"""Reward Memory recall latency with the ``local`` provider at 1k / 10k / 100k active
records in one corpus.

Sets up Django on a throwaway SQLite database (unless DATABASE_URL is set), registers
one soft_preference corpus through the real service, bulk-loads active records exactly
as the ingest pipeline stores them (record row, local provider document with the
canonical content bytes, full-text index entry), growing the same corpus 1k → 10k →
100k. At each size it times ``reward_memory.services.recall(execute=True)`` — guards,
full-text ranking, exact byte readback check, lifecycle filter and the receipt write —
for a set of natural-language queries drawn from the corpus vocabulary (Zipf-weighted,
stop words included). Prints one JSON line: p50/p95 per size and the 1k → 100k growth
of p95 (targets: p95 ≤ 20 ms at 100k, growth ≤ 3×).

Usage: .venv/bin/python bench/reward_memory_bench.py [--quick] [--queries N]
(``--quick``: 1k / 5k / 20k, for a fast check).
"""

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

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
    return words, weights


def sentence(rng, words, weights, n) -> str:
    out = []
    for _ in range(n):
        if rng.random() < 0.3:
            out.append(rng.choice(STOP))
        else:
            out.append(rng.choices(words, weights)[0])
    text = " ".join(out)
    return text[0].upper() + text[1:] + "."


def setup_django() -> Path | None:
    tmp = None
    if "DATABASE_URL" not in os.environ:
        tmp = Path(tempfile.mkdtemp(prefix="loopx-rm-bench-")) / "bench.sqlite3"
        os.environ["DATABASE_URL"] = f"sqlite:///{tmp}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "loopx_site.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    return tmp


def register_corpus():
    from loopx_site.core import services as core
    from reward_memory import services
    from reward_memory.models import Corpus

    core.register_goal(goal_id="bench", agent_ids=["agent"])
    corpus = {
        "schema_version": "reward_memory_corpus_v0",
        "corpus_id": "bench-prefs",
        "memory_class": "soft_preference",
        "owner": "user:owner",
        "reviewer": "user:reviewer",
        "authority_source": "repo:bench/maintainers",
        "maintenance": {"retirement_authority": "user:owner"},
        "project": "bench",
        "surfaces": ["issue_fix.pr_description"],
        "provider_binding": {"provider_id": "local", "scope_ref": "local:bench-prefs"},
        "agent_allowlist": [{"goal_id": "bench", "agent_id": "agent"}],
    }
    services.register_corpus(corpus=corpus, execute=True)
    return Corpus.objects.get(corpus_id="bench-prefs")


def bulk_load(corpus, start: int, stop: int, rng, words, weights) -> None:
    """Rows identical in shape to what the ingest pipeline writes (no per-row pipeline)."""
    from django.db import transaction

    from loopx_site.core import clock, fulltext
    from loopx_site.core.canonical import canonical_bytes, digest_ref, prefixed_id
    from loopx_site.core.models import SearchDocument
    from reward_memory import selectors
    from reward_memory.models import LocalProviderDocument, MemoryRecord
    from reward_memory.providers import local

    now = clock.now()
    binding = selectors.provider_binding(corpus)
    provider = local.LocalProvider()
    namespace = local.namespace(binding, "issue_fix.pr_description")
    ns_key = fulltext.namespace_token(namespace)
    batch = 5000
    from loopx_site.core.progress import bar

    batches = range(start, stop, batch)
    for lo in bar(batches, desc=f"load {stop:,} records", unit="batch", fmt="json"):
        records, docs, search = [], [], []
        for i in range(lo, min(stop, lo + batch)):
            summary = sentence(rng, words, weights, rng.randint(9, 16))
            candidate_ref = prefixed_id("cand_", {"bench": i})
            record_ref = prefixed_id("rmr_", {"bench": i})
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
                "authority": {"kind": "advisory", "action_scopes": []},
                "confidence": {"level": "medium", "basis": "bench"},
            }
            digest = digest_ref(content)
            records.append(
                MemoryRecord(
                    record_ref=record_ref,
                    corpus=corpus,
                    candidate_ref=candidate_ref,
                    memory_class="soft_preference",
                    project="bench",
                    surface="issue_fix.pr_description",
                    summary=summary,
                    content=content,
                    content_digest=digest,
                    activation_basis="standing_policy",
                    policy_digest="sha256:" + "0" * 64,
                    writer="user:owner",
                    source_kind="maintainer_feedback",
                    source_actor="user:bench",
                    observed_at=now,
                    confidence_level="medium",
                    authority=content["authority"],
                    lifecycle_state="active",
                    provider_id="local",
                    provider_resource_ref=resource,
                    provider_ref_digest=digest_ref(resource),
                    readback_verified_at=now,
                    created_at=now,
                    activated_at=now,
                    state_changed_at=now,
                )
            )
            docs.append(
                LocalProviderDocument(
                    scope_key=binding.scope_key,
                    resource_ref=resource,
                    surface="issue_fix.pr_description",
                    content=canonical_bytes(content).decode("utf-8"),
                    content_digest=digest,
                    recallable=True,
                    created_at=now,
                    updated_at=now,
                )
            )
            search.append(
                SearchDocument(
                    namespace=namespace,
                    namespace_key=ns_key,
                    ref=resource,
                    body=summary,
                    updated_at=now,
                )
            )
        with transaction.atomic():
            MemoryRecord.objects.bulk_create(records)
            LocalProviderDocument.objects.bulk_create(docs)
            SearchDocument.objects.bulk_create(search)


def measure(corpus, queries: list[str], tag: str) -> dict:
    from loopx_site.core import clock
    from reward_memory import services

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
                "checkpoint_ref": "checkpoint:bench",
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

    for i, q in enumerate(queries[:10]):  # warm-up
        services.recall(request=request(f"w{i}", q), execute=True)
    timings, hits = [], 0
    for i, q in enumerate(queries):
        started = time.perf_counter()
        result = services.recall(request=request(i, q), execute=True)
        timings.append((time.perf_counter() - started) * 1000)
        assert result["status"] in ("ok", "empty"), result["status"]
        hits += len(result["items"])
    timings.sort()
    return {
        "p50_ms": round(statistics.median(timings), 3),
        "p95_ms": round(timings[int(0.95 * (len(timings) - 1))], 3),
        "mean_items": round(hits / len(queries), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1k / 5k / 20k")
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    sizes = [1000, 5000, 20000] if args.quick else [1000, 10000, 100000]

    tmp = setup_django()
    from django.db import connection

    rng = random.Random(20261201)
    words, weights = vocabulary(rng)
    corpus = register_corpus()
    queries = [sentence(rng, words, weights, rng.randint(3, 7)) for _ in range(args.queries)]

    results, loaded = {}, 0
    load_seconds = {}
    for size in sizes:
        started = time.perf_counter()
        bulk_load(corpus, loaded, size, rng, words, weights)
        load_seconds[str(size)] = round(time.perf_counter() - started, 1)
        loaded = size
        results[str(size)] = measure(corpus, queries, f"n{size}")
        print(f"{size} records: {results[str(size)]}", file=sys.stderr)

    first, last = results[str(sizes[0])], results[str(sizes[-1])]
    growth = round(last["p95_ms"] / first["p95_ms"], 2)
    line = {
        "bench": "reward_memory_recall_local",
        "backend": connection.vendor,
        "sizes": sizes,
        "queries": args.queries,
        "p50_ms": {k: v["p50_ms"] for k, v in results.items()},
        "p95_ms": {k: v["p95_ms"] for k, v in results.items()},
        "mean_items": {k: v["mean_items"] for k, v in results.items()},
        "growth_p95_first_to_last": growth,
        "targets": {"p95_ms_at_100k": 20, "growth_1k_to_100k": 3},
        "meets_targets": last["p95_ms"] <= 20 and growth <= 3,
        "load_seconds": load_seconds,
    }
    print(json.dumps(line))
    if tmp is not None:
        for suffix in ("", "-wal", "-shm"):
            Path(str(tmp) + suffix).unlink(missing_ok=True)


if __name__ == "__main__":
    main()
