"""A replayed turn keeps its identity and receipt but re-reads the present: guidance whose
record was retired, revoked, superseded or expired since is dropped and counted."""

import datetime as dt
import json

from reward_memory import services as rm
from reward_memory.models import MemoryRecord, RecallReceipt, RecordTransition
from tests.reward_memory import factories as rmf
from tests.turn_recall.conftest import remember_guidance
from tests.turn_recall.test_services import recall
from turn_recall.models import TurnRecallReceipt

RETIRED = "Re-read the acceptance criteria before resuming a flaky test fix."
KEPT = "Keep the turn summary under ten lines."


def _counts():
    return (
        TurnRecallReceipt.objects.count(),
        RecallReceipt.objects.count(),
        MemoryRecord.objects.count(),
    )


def _summaries(document):
    return [g["content_summary"] for g in document["context"]["guidance"]]


def test_turn_recall_replay_drops_guidance_retired_since_and_counts_it(
    db, todo, turn_corpus, double
):
    retired = remember_guidance(RETIRED, "ev-1")
    remember_guidance(KEPT, "ev-2")
    first = recall("turn-1")
    assert first["status"] == "applied"
    assert sorted(_summaries(first)) == sorted([RETIRED, KEPT])
    rm.retire_record(record_ref=retired["record_ref"], principal=rmf.op(rmf.RETIRER))
    before, calls = _counts(), double.call_count

    replay = recall("turn-1")

    assert replay["status"] == "replayed"
    assert replay["source_status"] == "applied"
    assert replay["turn_recall_id"] == first["turn_recall_id"]
    assert replay["same_turn_receipt_reused"] is True
    assert _summaries(replay) == [KEPT]
    assert RETIRED not in json.dumps(replay)
    assert replay["replay_dropped"]["count"] == 1
    assert replay["replay_dropped"]["by_reason"]["retired"] == 1
    assert replay["provider_call_count"] == 0
    assert double.call_count == calls
    assert _counts() == before, "a replay writes no second projection"


def test_turn_recall_replay_drops_revoked_superseded_and_expired_guidance_by_reason(
    db, todo, turn_corpus, double, frozen_clock
):
    revoked = remember_guidance("Revoked: ask before touching the CI config.", "ev-1")
    superseded = remember_guidance("Superseded: run the slow suite first.", "ev-2")
    remember_guidance("Expiring: pair with the reviewer today.", "ev-3", expires_at=(
        "2026-12-01T13:00:00Z"
    ))  # fmt: skip
    remember_guidance(KEPT, "ev-4")
    first = recall("turn-1")
    assert len(first["context"]["guidance"]) == 4
    successor = remember_guidance("Run the fast suite first, then the slow one.", "ev-5")
    rm.revoke_record(
        record_ref=revoked["record_ref"], principal=rmf.op(rmf.OWNER), revocation_ref="rev:1"
    )
    rm.supersede_record(
        record_ref=superseded["record_ref"],
        by_record_ref=successor["record_ref"],
        principal=rmf.op(rmf.OWNER),
    )
    frozen_clock.advance(dt.timedelta(hours=2))
    transitions = RecordTransition.objects.count()

    replay = recall("turn-1")

    assert replay["status"] == "replayed"
    assert _summaries(replay) == [KEPT]
    by_reason = replay["replay_dropped"]["by_reason"]
    assert (by_reason["revoked"], by_reason["superseded"], by_reason["expired"]) == (1, 1, 1)
    assert replay["replay_dropped"]["count"] == 3
    # the successor was never part of this turn: a replay serves no new guidance
    assert "fast suite" not in json.dumps(replay)
    assert RecordTransition.objects.count() == transitions


def test_turn_recall_replay_with_nothing_dropped_reports_zero_counts(db, todo, turn_corpus, double):
    remember_guidance(KEPT)
    first = recall("turn-1")
    replay = recall("turn-1")
    assert replay["context"]["guidance"] == first["context"]["guidance"]
    assert replay["replay_dropped"]["count"] == 0
    assert set(replay["replay_dropped"]["by_reason"].values()) == {0}
    assert "replay_dropped" not in first  # a fresh recall drops nothing it stored
