"""A replayed Reward Memory recall keeps its recall id and receipt, serves only what a
fresh read would (``selectors.replay_readable``) and counts the rest by reason."""

import json

from django.db import transaction

from reward_memory import selectors, services
from reward_memory.models import MemoryRecord, RecallReceipt, RecordTransition
from reward_memory.services import records
from tests.reward_memory import factories as f

SUMMARIES = [
    "Lead PR descriptions with the user-visible effect.",
    "List the validation commands in the PR description.",
    "Keep the PR description under twenty lines.",
]
QUERY = ["PR description"]


def _activate(summary, event_id):
    receipt = f.ingested(
        event=f.scoped_event(event_id, content_summary=summary),
        goal_id="demo",
        agent_id="author",
        execute=True,
    )
    assert receipt["status"] == "activated"
    return receipt["record_ref"]


def _recall(corpus):
    return f.recalled(request=f.recall_request(corpus, queries=QUERY), execute=True)


def test_reward_recall_replay_drops_records_closed_since_and_counts_them(db, double_corpus, double):
    refs = [_activate(s, f"ev-{i}") for i, s in enumerate(SUMMARIES)]
    first = _recall(double_corpus)
    assert sorted(i["memory_ref"] for i in first["items"]) == sorted(refs)
    services.retire_record(record_ref=refs[0], principal=f.op(f.RETIRER))
    services.revoke_record(record_ref=refs[1], principal=f.op(f.OWNER), revocation_ref="rev:1")
    double.reset_calls()
    receipts, transitions = RecallReceipt.objects.count(), RecordTransition.objects.count()

    replay = _recall(double_corpus)

    assert replay["recall_id"] == first["recall_id"]
    assert replay["replayed"] is True
    assert [i["memory_ref"] for i in replay["items"]] == [refs[2]]
    assert SUMMARIES[0] not in json.dumps(replay)
    assert SUMMARIES[1] not in json.dumps(replay)
    assert replay["replay_dropped"]["count"] == 2
    by_reason = replay["replay_dropped"]["by_reason"]
    assert (by_reason["retired"], by_reason["revoked"]) == (1, 1)
    assert double.call_count == 0
    assert (RecallReceipt.objects.count(), RecordTransition.objects.count()) == (
        receipts,
        transitions,
    ), "a replay writes no second projection"


def test_replay_readable_names_every_reason_a_stored_record_is_dropped(db, corpus):
    lessons = (  # four distinct lessons (a restated one would join the first's record)
        "Preference for short PR titles.",
        "Name the designated reviewer in the PR text.",
        "Link the issue the PR closes.",
        "List the migrations a PR adds.",
    )
    refs = [_activate(lesson, f"ev-{i}") for i, lesson in enumerate(lessons)]
    now = f.NOW
    with transaction.atomic():
        for ref, state in zip(refs[:3], ("quarantined", "refuted", "stale"), strict=True):
            records._transition(
                MemoryRecord.objects.get(record_ref=ref),
                to_state=state,
                reason=state,
                actor="system:test",
                now=now,
            )
    kept, dropped = selectors.replay_readable(
        [*refs, "rmr_missing"], goal_id="demo", agent_id="author", now=now
    )
    assert kept == [refs[3]]
    assert dropped["count"] == 4
    assert {k: v for k, v in dropped["by_reason"].items() if v} == {
        "quarantined": 1,
        "refuted": 1,
        "stale": 1,
        "missing": 1,
    }
    # another Goal may not read the corpus at all
    kept, dropped = selectors.replay_readable(
        [refs[3]], goal_id="other", agent_id="author", now=now
    )
    assert (kept, dropped["by_reason"]["not_readable"]) == ([], 1)


def test_applying_a_recalled_record_retired_since_is_not_applied(db, corpus):
    refs = [_activate(s, f"ev-{i}") for i, s in enumerate(SUMMARIES)]
    recall = f.recalled(request=f.recall_request(corpus, queries=QUERY), execute=True)
    recalled = [i["memory_ref"] for i in recall["items"]]
    assert set(recalled) == set(refs)
    services.retire_record(record_ref=recalled[0], principal=f.op(f.RETIRER))

    def apply(memory_refs):
        return f.applied(
            document={
                "schema_version": "reward_memory_application_v0",
                "recall_id": recall["recall_id"],
                "decision": "apply",
                "memory_refs": memory_refs,
                "reasoning_summary": "The effect-first ordering fits this PR.",
                "artifact_verification": {
                    "artifact_ref": "pr:proj-a#40",
                    "artifact_digest": "sha256:" + "a" * 64,
                    "verified": True,
                },
            },
            execute=True,
        )

    stale = apply(recalled[:1])
    assert (stale["status"], stale["reasons"]) == ("not_applied", ["memory_not_readable"])
    assert stale["original_output_kept"] is True
    live = apply(recalled[1:2])
    assert (live["status"], live["reasons"]) == ("applied", [])
