"""``memory export`` / ``memory import`` at scale: wall time and peak RSS of each, and
proof that memory stays flat.

Seeds one Goal whose corpus holds N records (each with its creation transition), then,
each in its own ``manage.py`` process (this process never loads Django, so each peak RSS
is the child's own, read with ``os.wait4``): export the Goal to a file; import that file
into a fresh, migrated database; export the imported Goal and compare the two files'
sha256 (they must be equal). It does so for a small and a large N in the same run: peak
RSS of the large ÷ the small shows whether memory grows with the Goal (flat ≈ 1).

Usage: .venv/bin/python bench/export_bench.py [--records 100000] [--small 10000]
(on PostgreSQL: scripts/with-postgres.sh .venv/bin/python bench/export_bench.py; the
import target is a second database on the same cluster). Prints one JSON line.
"""

import argparse
import atexit
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import ROOT, durability  # imports no Django at module level

GOAL = "bench-export"


def seed(records: int, goal_id: str) -> None:
    from django.db import transaction
    from django.utils import timezone

    from loopx_site.core import services
    from reward_memory.models import Corpus, MemoryRecord, RecordTransition

    services.register_goal(goal_id=goal_id, agent_ids=["agent"], execute=True)
    now = timezone.now()
    corpus = Corpus.objects.create(
        corpus_id=f"{goal_id}-corpus", memory_class="procedural_experience", owner="user:o",
        reviewer="user:r", authority_source="user:a", retirement_authority="user:o",
        project="bench", surfaces=["s"], provider_id="local", provider_scope_ref="bench",
        provider_binding_ref="sha256:" + "0" * 64, agent_allowlist=[f"{goal_id}/agent"],
        definition_digest="sha256:" + "1" * 64, created_at=now, updated_at=now,
    )  # fmt: skip
    step = 5000
    for start in range(0, records, step):
        with transaction.atomic():
            rows = [
                _record(corpus, goal_id, i, now) for i in range(start, min(records, start + step))
            ]
            MemoryRecord.objects.bulk_create(rows)
            made = MemoryRecord.objects.filter(record_ref__in=[r.record_ref for r in rows])
            RecordTransition.objects.bulk_create(
                RecordTransition(
                    record=r, seq=1, to_state="active", reason="created", actor="user:o", at=now
                )
                for r in made
            )


def _record(corpus, goal_id: str, i: int, now):
    from reward_memory.models import MemoryRecord

    text = f"bench memory {i}: keep the release notes short and link the changelog"
    return MemoryRecord(
        record_ref=f"rec:{goal_id}:{i:09d}", corpus=corpus, candidate_ref=f"cand:{i:09d}",
        memory_class="procedural_experience", project="bench", surface="s", summary=text,
        content={"summary": text, "n": i}, content_digest=f"sha256:{i:064d}",
        activation_basis="review", writer="user:o", source_kind="review",
        source_actor="user:o", observed_at=now, confidence_level="high", authority={},
        lifecycle_state="active", provider_id="local", provider_resource_ref=f"res/{i}",
        provider_ref_digest=f"sha256:{i:064d}", readback_verified_at=now, created_at=now,
        activated_at=now, state_changed_at=now,
    )  # fmt: skip


def manage(argv: list[str], database_url: str) -> dict:
    """Run ``manage.py argv`` against ``database_url``: wall seconds and the child's peak
    RSS (MiB, ``os.wait4``). Linux counts the parent's RSS at fork in a child's peak, so
    this process never loads Django: seeding runs in a child too."""
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "DJANGO_SETTINGS_MODULE": "loopx_site.settings",
    }
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, *argv], env=env, cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    out, err = child.stdout.read(), child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.perf_counter() - started
    if child.returncode:
        raise SystemExit(f"{argv[:3]} failed: {err.decode()[-2000:]}")
    return {"seconds": round(elapsed, 2), "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
            "stdout": out.decode()}  # fmt: skip


def managepy(argv: list[str], database_url: str) -> dict:
    result = manage([str(ROOT / "manage.py"), *argv], database_url)
    result.pop("stdout")
    return result


def child(argv: list[str]) -> None:
    """The parts that need Django, run in a child process of their own."""
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "loopx_site.settings")
    import django

    django.setup()
    if argv[0] == "seed":
        seed(int(argv[1]), argv[2])
    elif argv[0] == "createdb":
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{argv[1]}"')
            cursor.execute(f'CREATE DATABASE "{argv[1]}"')
    else:
        print(json.dumps(durability()))


def fresh_database(source: str, folder: Path, name: str) -> str:
    """A second, migrated database beside the one in use; its URL."""
    if source.startswith("sqlite"):
        target = f"sqlite:///{folder / (name + '.sqlite3')}"
    else:
        manage([__file__, "--child", "createdb", name], source)
        target = source.rsplit("/", 1)[0] + f"/{name}"
    managepy(["migrate", "-v0"], target)
    return target


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def leg(records: int, source: str, folder: Path) -> dict:
    goal_id = f"{GOAL}-{records}"
    seeded = manage([__file__, "--child", "seed", str(records), goal_id], source)["seconds"]
    first, second = folder / f"{records}-a.jsonl", folder / f"{records}-b.jsonl"
    exported = managepy(["memory", "export", "--goal-id", goal_id, "--output", str(first)], source)
    target = fresh_database(source, folder, f"bench_import_{records}")
    imported = managepy(["memory", "import", "--input", str(first), "--execute"], target)
    managepy(["memory", "export", "--goal-id", goal_id, "--output", str(second)], target)
    return {"records": records, "seed_seconds": seeded, "bytes": first.stat().st_size,
            "export": exported, "import": imported,
            "byte_identical": sha256(first) == sha256(second)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    folder = Path(tempfile.mkdtemp(prefix="loopx-export-bench-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    source = os.environ.get("DATABASE_URL") or f"sqlite:///{folder / 'bench.sqlite3'}"
    managepy(["migrate", "-v0"], source)
    small, large = leg(args.small, source, folder), leg(args.records, source, folder)
    growth = {
        phase: round(large[phase]["peak_rss_mib"] / small[phase]["peak_rss_mib"], 2)
        for phase in ("export", "import")
    }
    engine = json.loads(manage([__file__, "--child", "durability"], source)["stdout"])
    same = small["byte_identical"] and large["byte_identical"]
    print(json.dumps({"bench": "export_import", "durability": engine, "small": small,
                      "large": large, "peak_rss_large_over_small": growth,
                      "byte_identical": same}))  # fmt: skip


if __name__ == "__main__":
    main()
