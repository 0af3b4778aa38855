"""Agent Turn Recall latency at 10k and 100k active turn-admission records.

Sets up Django on a throwaway SQLite database (unless DATABASE_URL is set), registers
Goal ``bench`` with Agent ``agent``, one open Todo, one committed preference (so the
participating hook runs) and the operator binding of a ``local``-provider corpus to
``agent_workflow.turn_admission``; bulk-loads active records in the shape the ingest
pipeline writes (record, provider document, full-text entry), growing 10k → 100k.

At each size it alternates, call by call:
* ``cold``: ``agent_turn_recall(execute=True)`` with a new turn id (reconcile, one
  guarded recall, exact readback, receipt write, fresh preference read);
* ``replay``: the same call with an already-executed turn id (receipt reuse, zero
  provider calls);
* ``preview``: the same packet without ``execute`` (the baseline).
Prints one JSON object: p50/p95 per mode and size, and p95 ratios against the preview
baseline. Targets on SQLite: replay p95 ≤ 5 ms, cold p95 ≤ 30 ms.

Usage: .venv/bin/python bench/turn_recall_bench.py [--quick] [--calls N]
(``--quick``: 1k / 10k).
"""

import argparse
import json
import random
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import django_on_temp_db

SURFACE = "agent_workflow.turn_admission"
TOPICS = (
    "turn todo quota summary acceptance criteria validation flaky test retry review merge "
    "branch docs release schema migration lock cache index latency regression owner "
    "reviewer preference policy scope evidence artifact revision"
)
WORDS = re.findall(r"\S+", TOPICS) + [f"w{i:04d}" for i in range(1500)]


def arrange():
    from loopx_site.core import services as core
    from preferences import services as pref
    from reward_memory import services as rm
    from reward_memory.models import Corpus
    from turn_recall import quota

    core.register_goal(goal_id="bench", agent_ids=["agent"])
    from hooks import services as hooks

    hooks.add_todo(
        goal_id="bench",
        todo_id="t1",
        title="Fix the flaky validation test before the release branch",
        segment_ref="release",
        execute=True,
    )
    pref.remember(
        goal_id="bench", agent_id="agent", key="review.collaboration",
        statement="Ask the designated reviewer before merging.", source_ref="m-1",
        source_quote="Use the reviewer.", expected_revision="none", operation_id="p-1",
        execute=True,
    )  # fmt: skip
    rm.register_corpus(
        corpus={
            "schema_version": "reward_memory_corpus_v0",
            "corpus_id": "bench-turns",
            "memory_class": "soft_preference",
            "owner": "user:owner",
            "reviewer": "user:reviewer",
            "authority_source": "repo:bench/maintainers",
            "maintenance": {"retirement_authority": "user:owner"},
            "project": "bench",
            "surfaces": [SURFACE],
            "provider_binding": {"provider_id": "local", "scope_ref": "local:bench-turns"},
            "agent_allowlist": [{"goal_id": "bench", "agent_id": "agent"}],
        },
        execute=True,
    )
    enable_experiment()
    return Corpus.objects.get(corpus_id="bench-turns"), quota.should_run(
        goal_id="bench", agent_id="agent"
    )


def enable_experiment() -> None:
    """Switch turn recall on the way an operator does: a private experiment config (in a
    temporary, non-git directory) and ``configure_goal --execute`` (canary + readback)."""
    import tempfile

    from django.conf import settings

    from reward_memory import services as rm

    root = tempfile.mkdtemp(prefix="loopx-turn-bench-")
    settings.REWARD_MEMORY_CONFIG_ROOT = root
    config = {
        "schema_version": "reward_memory_experiment_config_v1",
        "project_provider_binding": {
            "provider_id": "local",
            "namespace": "reward_memory",
            "corpus_scopes": [{"corpus_id": "bench-turns", "scope_ref": "local:bench-turns"}],
        },
        "corpora": [{"corpus": {"corpus_id": "bench-turns"}, "standing_policy": {}}],
        "surfaces": [
            {
                "surface_id": SURFACE,
                "adapter": "scoped_feedback",
                "corpus_ids": ["bench-turns"],
                "ingest_corpus_id": "bench-turns",
                "recall_profile": {
                    "profile_id": "turn_admission_v1",
                    "mode": "function_boundary",
                    "max_queries": 1,
                    "limit": 4,
                },
            }
        ],
    }
    Path(root, "experiment.json").write_text(json.dumps(config))
    rm.configure_goal(
        goal_id="bench", agent_id="agent", config_path="experiment.json", execute=True
    )


def bulk_load(corpus, start: int, stop: int, rng: random.Random) -> None:
    from django.db import transaction

    from loopx_site.core import clock
    from loopx_site.core.canonical import canonical_bytes, digest_ref, prefixed_id
    from loopx_site.engines import fulltext
    from reward_memory import selectors
    from reward_memory.models import LocalProviderDocument, MemoryRecord
    from reward_memory.providers import local

    now = clock.now()
    binding = selectors.provider_binding(corpus)
    provider = local.LocalProvider()
    namespace = local.namespace(binding, SURFACE)
    for lo in range(start, stop, 5000):
        records, docs, search = [], [], []
        for i in range(lo, min(stop, lo + 5000)):
            summary = " ".join(rng.choices(WORDS, k=rng.randint(8, 14))).capitalize() + "."
            record_ref = prefixed_id("rmr_", {"turn-bench": i})
            candidate_ref = prefixed_id("cand_", {"turn-bench": i})
            resource = provider.resource_ref(binding, surface=SURFACE, key=f"{i:040d}")
            content = {
                "schema_version": "reward_memory_provider_content_v0",
                "record_ref": record_ref,
                "corpus_id": corpus.corpus_id,
                "memory_class": "soft_preference",
                "candidate_ref": candidate_ref,
                "summary": summary,
                "scope": {"project": "bench", "surface": SURFACE},
                "authority": {"kind": "advisory", "action_scopes": []},
                "confidence": {"level": "medium", "basis": "bench"},
            }
            digest = digest_ref(content)
            records.append(
                MemoryRecord(
                    record_ref=record_ref, corpus=corpus, candidate_ref=candidate_ref,
                    memory_class="soft_preference", project="bench", surface=SURFACE,
                    summary=summary, content=content, content_digest=digest,
                    activation_basis="standing_policy", policy_digest="sha256:" + "0" * 64,
                    writer="user:owner", source_kind="maintainer_feedback",
                    source_actor="user:bench", observed_at=now, confidence_level="medium",
                    authority=content["authority"], lifecycle_state="active",
                    provider_id="local", provider_resource_ref=resource,
                    provider_ref_digest=digest_ref(resource), readback_verified_at=now,
                    created_at=now, activated_at=now, state_changed_at=now,
                )
            )  # fmt: skip
            docs.append(
                LocalProviderDocument(
                    scope_key=binding.scope_key, resource_ref=resource, surface=SURFACE,
                    content=canonical_bytes(content).decode("utf-8"), content_digest=digest,
                    recallable=True, created_at=now, updated_at=now,
                )
            )  # fmt: skip
            search.append((resource, summary))
        with transaction.atomic():
            MemoryRecord.objects.bulk_create(records)
            LocalProviderDocument.objects.bulk_create(docs)
            fulltext.index_many(namespace, search)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(packet: dict, size: int, calls: int) -> dict:
    from turn_recall import documents, services

    def call(turn: str, execute: bool) -> tuple[float, dict]:
        start = time.perf_counter()
        doc = documents.turn_recall(services.agent_turn_recall(
            goal_id="bench", agent_id="agent", turn_instance_id=turn,
            quota_decision=packet, execute=execute,
        ))  # fmt: skip
        return (time.perf_counter() - start) * 1000, doc

    warm = call(f"warm-{size}", True)[1]
    assert warm["status"] in ("applied", "empty"), warm["status"]
    times: dict[str, list[float]] = {"cold": [], "replay": [], "preview": []}
    replay_calls = 0
    for i in range(calls):
        ms, _ = call(f"cold-{size}-{i}", True)
        times["cold"].append(ms)
        ms, doc = call(f"warm-{size}", True)
        assert doc["status"] == "replayed"
        replay_calls += doc["provider_call_count"]
        times["replay"].append(ms)
        ms, _ = call(f"preview-{size}-{i}", False)
        times["preview"].append(ms)
    out = {
        mode: {
            "p50_ms": round(statistics.median(v), 3),
            "p95_ms": round(pct(v, 0.95), 3),
        }
        for mode, v in times.items()
    }
    base = out["preview"]["p95_ms"] or 1e-9
    out["ratio_p95_vs_preview"] = {
        "cold": round(out["cold"]["p95_ms"] / base, 2),
        "replay": round(out["replay"]["p95_ms"] / base, 2),
    }
    out["replay_provider_calls"] = replay_calls
    out["guidance_items"] = len(warm["context"]["guidance"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args()
    django_on_temp_db()
    from django.db import connection

    sizes = [1000, 10_000] if args.quick else [10_000, 100_000]
    corpus, packet = arrange()
    rng = random.Random(7)
    loaded = 0
    results = {}
    for size in sizes:
        bulk_load(corpus, loaded, size, rng)
        loaded = size
        results[str(size)] = measure(packet, size, args.calls)
    targets = {"replay_p95_ms": 5.0, "cold_p95_ms": 30.0}
    largest = results[str(sizes[-1])]
    print(
        json.dumps(
            {
                "bench": "turn_recall",
                "database": connection.vendor,
                "calls_per_mode": args.calls,
                "sizes": results,
                "targets": targets,
                "meets_targets": largest["replay"]["p95_ms"] <= targets["replay_p95_ms"]
                and largest["cold"]["p95_ms"] <= targets["cold_p95_ms"],
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
