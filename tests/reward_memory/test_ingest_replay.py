"""Ingest replays re-read the present, and ``event_id`` is the idempotency key.

A replayed event keeps its receipt identity but reports availability, the record's state
and the guards from now (never the stored answer unchecked); the same ``event_id`` with
other content is ``operation_conflict`` and writes nothing."""

import json
import threading

import pytest
from django.db import connections

from reward_memory import services
from reward_memory.errors import RewardMemoryError
from reward_memory.models import (
    IngestEvent,
    LocalProviderDocument,
    MemoryRecord,
    PendingIngest,
    RecordTransition,
)
from tests.helpers import run_cli
from tests.reward_memory import factories as f


def ingest(event=None, execute=True, **kwargs):
    kwargs.setdefault("goal_id", "demo")
    kwargs.setdefault("agent_id", "author")
    return f.ingested(event=event or f.scoped_event(), execute=execute, **kwargs)


def _rows():
    return (
        IngestEvent.objects.count(),
        MemoryRecord.objects.count(),
        LocalProviderDocument.objects.count(),
        RecordTransition.objects.count(),
        PendingIngest.objects.count(),
    )


def _hard_policy_event(event_id="hp-1"):
    event = f.hard_policy_candidate()
    event.pop("schema_version")
    return {
        "schema_version": "scoped_feedback_reward_memory_event_v0",
        "event_id": event_id,
        "corpus_id": "policy",
        **event,
    }


# -- replays re-read the present -----------------------------------------------------------
def test_ingest_replay_after_revoke_reports_memory_unavailable(db, double_corpus, double):
    first = ingest()
    assert (first["memory_available_for_recall"], first["record_state"]) == (True, "active")
    services.revoke_record(
        record_ref=first["record_ref"], principal=f.op(f.OWNER), revocation_ref="revocation:1"
    )
    before, calls = _rows(), double.call_count

    replay = ingest()

    assert replay["receipt_id"] == first["receipt_id"]
    assert replay["record_ref"] == first["record_ref"]
    assert (replay["replayed"], replay["deduplicated"]) == (True, True)
    assert replay["memory_available_for_recall"] is False
    assert replay["record_state"] == "revoked"
    assert replay["guard"]["status"] == "guard_blocked"
    assert "lineage_closed" in {r["code"] for r in replay["guard"]["reasons"]}
    assert double.call_count == calls, "a replay makes no provider call"
    assert _rows() == before, "a replay writes no second projection"


@pytest.mark.parametrize("operation", ["retire", "supersede"])
def test_ingest_replay_after_retire_or_supersede_reports_the_present_state(
    db, double_corpus, double, operation
):
    first = ingest()
    if operation == "retire":
        services.retire_record(record_ref=first["record_ref"], principal=f.op(f.RETIRER))
        expected = "retired"
    else:
        successor = ingest(
            f.scoped_event("ev-2", content_summary="Open the PR description with the Why.")
        )
        services.supersede_record(
            record_ref=first["record_ref"],
            by_record_ref=successor["record_ref"],
            principal=f.op(f.OWNER),
        )
        expected = "superseded"
    before = _rows()
    replay = ingest()
    assert replay["receipt_id"] == first["receipt_id"]
    assert (replay["record_state"], replay["memory_available_for_recall"]) == (expected, False)
    assert _rows() == before


def test_ingest_replay_after_checkpoint_revoke_reports_memory_unavailable(db, agents):
    f.register(
        "policy",
        memory_class="hard_policy",
        agents=[("demo", "author")],
        policy_kwargs={
            "roles": ["core_contributor"],
            "action_scopes": ["issue_fix.request_reproduction", "issue_fix.request_changes"],
        },
    )
    first = ingest(_hard_policy_event())
    assert first["status"] == "activated"
    services.revoke_checkpoint(checkpoint_id=f.CHECKPOINT_ID, operator=f.op(f.OWNER), execute=True)
    before = _rows()

    replay = ingest(_hard_policy_event())

    assert replay["receipt_id"] == first["receipt_id"]
    assert replay["memory_available_for_recall"] is False
    assert replay["record_state"] == "revoked"
    assert replay["guard"]["status"] == "guard_blocked"
    assert _rows() == before


def test_ingest_replay_of_an_expired_record_reports_it_expired(
    db, double_corpus, double, frozen_clock
):
    import datetime as dt

    first = ingest(f.scoped_event(expires_at="2026-12-01T13:00:00Z"))
    assert first["memory_available_for_recall"] is True
    frozen_clock.advance(dt.timedelta(hours=2))
    replay = ingest(f.scoped_event(expires_at="2026-12-01T13:00:00Z"))
    assert replay["receipt_id"] == first["receipt_id"]
    assert (replay["record_state"], replay["memory_available_for_recall"]) == ("expired", False)


def test_ingest_replay_of_a_live_record_is_the_stored_receipt(db, double_corpus, double):
    first = ingest()
    replay = ingest()
    assert replay == {**first, "deduplicated": True, "replayed": True}


# -- event_id idempotency ------------------------------------------------------------------
def test_same_event_id_with_changed_summary_is_operation_conflict_and_writes_nothing(
    db, double_corpus, double
):
    first = ingest(f.scoped_event("ev-1"))
    assert first["status"] == "activated"
    before, calls = _rows(), double.call_count
    changed = f.scoped_event("ev-1", content_summary="A different preference entirely.")
    with pytest.raises(RewardMemoryError) as exc:
        ingest(changed)
    assert (exc.value.code, exc.value.http_status, exc.value.field) == (
        "operation_conflict",
        409,
        "event_id",
    )
    assert "different preference" not in exc.value.message
    with pytest.raises(RewardMemoryError) as exc:  # a preview validates the same rule
        ingest(changed, execute=False)
    assert exc.value.code == "operation_conflict"
    assert _rows() == before
    assert double.call_count == calls
    assert MemoryRecord.objects.get().record_ref == first["record_ref"]


def test_same_event_id_and_content_replays(db, double_corpus, double):
    first = ingest(f.scoped_event("ev-1"))
    again = ingest(f.scoped_event("ev-1"))
    assert again["receipt_id"] == first["receipt_id"]
    assert again["replayed"] is True
    assert IngestEvent.objects.count() == 1


def test_a_new_event_id_for_new_content_activates_a_second_record(db, double_corpus, double):
    ingest(f.scoped_event("ev-1"))
    second = ingest(f.scoped_event("ev-2", content_summary="A different preference entirely."))
    assert second["status"] == "activated"
    assert MemoryRecord.objects.count() == 2


def test_event_id_conflict_over_the_api_is_409_and_over_the_cli_exit_2(
    db, host_client, corpus, tmp_path
):
    client = host_client("demo", "author")

    def post(event):
        body = {"goal_id": "demo", "agent_id": "author", "event": event, "execute": True}
        return client.post(
            "/api/v1/reward-memory/ingest/", data=json.dumps(body), content_type="application/json"
        )

    assert post(f.scoped_event("ev-1")).status_code == 200
    before = _rows()
    changed = f.scoped_event("ev-1", content_summary="A different preference entirely.")
    answer = post(changed)
    assert answer.status_code == 409
    body = answer.json()
    assert (body["ok"], body["status"], body["code"]) == (
        False,
        "operation_conflict",
        "operation_conflict",
    )
    assert body["schema_version"] == "reward_memory_error_v0"
    path = tmp_path / "event.json"
    path.write_text(json.dumps(changed))
    cli = run_cli(
        "reward_memory", "ingest-event", "--goal-id", "demo", "--agent-id", "author",
        "--input", str(path), "--execute",
    )  # fmt: skip
    assert cli.code == 2
    assert cli.json["code"] == "operation_conflict"
    assert _rows() == before


def _race(n, target):
    barrier = threading.Barrier(n)
    results, errors = [], []

    def run(i):
        try:
            barrier.wait(timeout=30)
            results.append(target(i))
        except RewardMemoryError as exc:
            errors.append(exc.code)
        except Exception as exc:  # surfaced below
            errors.append(repr(exc))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return results, errors


@pytest.mark.parametrize("n", [2, 6])
@pytest.mark.django_db(transaction=True)
def test_racing_writers_of_one_event_id_with_different_content_activate_exactly_one(agents, n):
    f.register("prefs", agents=[("demo", "author")])

    def write(i):
        event = f.scoped_event("ev-race", content_summary=f"Preference variant number {i}.")
        return ingest(event)

    results, errors = _race(n, write)
    assert len(results) == 1, (results, errors)
    assert results[0]["status"] == "activated"
    assert errors == ["operation_conflict"] * (n - 1)
    assert IngestEvent.objects.count() == 1
    assert MemoryRecord.objects.count() == 1
    assert LocalProviderDocument.objects.count() == 1
