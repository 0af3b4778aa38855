"""Racing duplicate ingest events (threads, and separate processes): exactly one record,
one event row, and every racer gets the same activated receipt. Runs on SQLite and
PostgreSQL (the suite's second leg)."""

import json
import threading

import pytest
from django.db import connection, connections

from reward_memory.models import IngestEvent, LocalProviderDocument, MemoryRecord, RecordTransition
from tests.helpers import run_manage
from tests.reward_memory import factories as f

PAST = {"observed_at": "2025-01-01T00:00:00Z"}


def _race(n, target):
    barrier = threading.Barrier(n)
    results, errors = [], []

    def run(i):
        try:
            barrier.wait(timeout=30)
            results.append(target(i))
        except Exception as exc:  # surfaced below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    return results


@pytest.mark.parametrize("n", [2, 8])
@pytest.mark.django_db(transaction=True)
def test_racing_duplicate_ingest_events_make_one_record(agents, n):
    f.register("prefs", agents=[("demo", "author")])
    event = f.scoped_event()

    def ingest(_):
        return f.ingested(event=event, goal_id="demo", agent_id="author", execute=True)

    receipts = _race(n, ingest)
    assert len(receipts) == n
    assert {r["status"] for r in receipts} == {"activated"}
    # one receipt; racers answered from the stored one say so with `deduplicated` and
    # `replayed`
    same = {
        json.dumps({**r, "deduplicated": None, "replayed": None}, sort_keys=True) for r in receipts
    }
    assert len(same) == 1
    assert MemoryRecord.objects.count() == 1
    assert MemoryRecord.objects.get().lifecycle_state == "active"
    assert IngestEvent.objects.count() == 1
    assert LocalProviderDocument.objects.count() == 1
    assert list(RecordTransition.objects.values_list("to_state", flat=True).order_by("seq")) == [
        "pending_activation",
        "active",
    ]


@pytest.mark.django_db(transaction=True)
def test_racing_distinct_events_of_one_candidate_make_one_record(agents):
    f.register("prefs", agents=[("demo", "author")])

    def ingest(i):
        return f.ingested(
            event=f.scoped_event(f"ev-{i}"), goal_id="demo", agent_id="author", execute=True
        )

    receipts = _race(6, ingest)
    assert {r["status"] for r in receipts} == {"activated"}
    assert len({r["record_ref"] for r in receipts}) == 1
    assert MemoryRecord.objects.count() == 1
    assert IngestEvent.objects.count() == 6


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_racing_processes_make_one_record(agents, tmp_path):
    f.register("prefs", agents=[("demo", "author")])
    path = tmp_path / "event.json"
    path.write_text(json.dumps(f.scoped_event(source=PAST)))
    argv = ["reward_memory", "ingest-event", "--goal-id", "demo", "--agent-id", "author",
            "--input", str(path), "--execute"]  # fmt: skip
    connection.close()
    outputs = _race(4, lambda _: run_manage(*argv, timeout=120))
    for out in outputs:
        assert out.returncode == 0, out.stdout + out.stderr
    receipts = [json.loads(o.stdout) for o in outputs]
    assert {r["status"] for r in receipts} == {"activated"}
    assert (
        len(
            {
                json.dumps({**r, "deduplicated": None, "replayed": None}, sort_keys=True)
                for r in receipts
            }
        )
        == 1
    )
    assert MemoryRecord.objects.count() == 1
    assert IngestEvent.objects.count() == 1
