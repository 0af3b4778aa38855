"""Stage 3 recall and application receipts."""

import datetime as dt
import json

import pytest

from reward_memory import services
from reward_memory.documents import recall as recall_documents
from reward_memory.documents import registry
from reward_memory.domain.guards import Reason
from reward_memory.errors import RewardMemoryError
from reward_memory.models import ApplicationReceipt, RecallReceipt
from tests.reward_memory import factories as f

SUMMARIES = [
    "Lead PR descriptions with the user-visible effect.",
    "List the validation commands in the PR description.",
    "Keep the PR description under twenty lines.",
]


def _activate(summary, event_id, **overrides):
    receipt = f.ingested(
        event=f.scoped_event(event_id, content_summary=summary, **overrides),
        goal_id="demo",
        agent_id="author",
        execute=True,
    )
    assert receipt["status"] == "activated"
    return receipt["record_ref"]


@pytest.fixture
def refs(corpus):
    return [_activate(s, f"ev-{i}") for i, s in enumerate(SUMMARIES)]


def _recall(corpus, execute=True, **overrides):
    return f.recalled(request=f.recall_request(corpus, **overrides), execute=execute)


def test_function_boundary_recall_returns_active_records_privately(db, corpus, refs):
    result = _recall(corpus, queries=["user visible effect"])
    assert result["status"] == "ok"
    assert result["provider_calls"] == 1
    assert {i["memory_ref"] for i in result["items"]} <= set(refs)
    assert result["items"][0]["summary"] == SUMMARIES[0]
    assert result["items"][0]["authority"] == "advisory"
    packet = result["public_packet"]
    text = json.dumps(packet)
    for summary in SUMMARIES:
        assert summary not in text
    assert "user visible effect" not in text
    assert all(i["memory_ref_digest"].startswith("sha256:") for i in packet["items"])
    assert packet["authority_derived_from_hits"] is False
    assert RecallReceipt.objects.get().packet == packet


def test_preview_runs_the_guards_without_the_provider(db, double_corpus, double):
    result = _recall(double_corpus, execute=False)
    assert result["status"] == "preview"
    assert result["guard"]["status"] == "passed"
    assert double.call_count == 0
    assert not RecallReceipt.objects.exists()


def test_bounded_agentic_search_allows_three_queries_and_refuses_a_fourth(
    db, double_corpus, double
):
    ok = _recall(double_corpus, mode="bounded_agentic_search", queries=["a", "b", "c"])
    assert ok["status"] == "empty"
    assert double.calls == ["recall", "recall", "recall"]
    double.reset_calls()
    refused = _recall(double_corpus, mode="bounded_agentic_search", queries=["a", "b", "c", "d"])
    assert refused["status"] == "guard_blocked"
    assert [r["code"] for r in refused["guard"]["reasons"]] == ["query_budget_exceeded"]
    assert double.call_count == 0


def test_function_boundary_refuses_a_second_query(db, double_corpus, double):
    result = _recall(double_corpus, queries=["a", "b"])
    assert result["guard"]["reasons"] == [{"code": "query_budget_exceeded", "field": "queries"}]
    assert double.call_count == 0


def test_retired_revoked_and_superseded_records_are_never_returned(db, double_corpus, double):
    a = _activate(SUMMARIES[0], "ev-a")
    b = _activate(SUMMARIES[1], "ev-b")
    c = _activate(SUMMARIES[2], "ev-c")
    d = _activate("PR description template for releases.", "ev-d")
    double.available = False  # the provider keeps returning them: LoopX must filter
    services.retire_record(record_ref=a, principal=f.op(f.RETIRER))
    services.revoke_record(record_ref=b, principal=f.op(f.OWNER), revocation_ref="revocation:b")
    services.supersede_record(record_ref=c, by_record_ref=d, principal=f.op(f.OWNER))
    double.available = True
    result = _recall(double_corpus, queries=["PR description"])
    assert [i["memory_ref"] for i in result["items"]] == [d]
    assert result["public_packet"]["filtered"]["not_active"] == 3


def test_expired_records_are_never_returned(db, corpus, frozen_clock):
    keep = _activate(SUMMARIES[0], "ev-keep")
    _activate(SUMMARIES[1], "ev-soon", expires_at="2026-12-01T13:00:00Z")
    before = _recall(corpus, queries=["PR description"])
    assert len(before["items"]) == 2
    frozen_clock.advance(dt.timedelta(hours=1))
    after = _recall(corpus, queries=["PR description"], request_id="again")
    assert [i["memory_ref"] for i in after["items"]] == [keep]
    assert after["public_packet"]["filtered"]["expired"] == 1


def test_provider_bytes_that_do_not_read_back_exactly_are_dropped(db, double_corpus, double):
    _activate(SUMMARIES[0], "ev-1")
    double.tamper_readback = True
    result = _recall(double_corpus, queries=["PR description effect"])
    assert result["items"] == []
    assert result["status"] == "empty"
    assert result["public_packet"]["filtered"]["readback_mismatch"] == 1


def test_recall_never_crosses_corpora(db, agents):
    one = f.register("one", agents=[("demo", "author")])
    f.register("two", agents=[("demo", "author")])
    f.ingested(
        event=f.scoped_event("x", corpus_id="two"), goal_id="demo", agent_id="author", execute=True
    )
    result = _recall(one, queries=["PR description effect"])
    assert result["items"] == []


def test_provider_unavailable_fails_open_with_setup_guidance(db, double_corpus, double):
    double.available = False
    result = _recall(double_corpus)
    assert result["status"] == "provider_unavailable"
    assert result["items"] == []
    assert result["setup_guidance"]
    assert result["public_packet"]["user_gate"] is False
    assert result["public_packet"]["failure_kind"] == "unavailable"
    assert RecallReceipt.objects.get().status == "provider_unavailable"


def test_uninstalled_provider_fails_open(db, agents):
    corpus = f.register(
        "ov",
        provider_id="openviking",
        agents=[("demo", "author", "peer-1")],
        scope_ref="viking://user/u1/peers/peer-1/memories/reward_memory",
    )
    result = _recall(corpus)
    assert result["status"] == "provider_unavailable"
    assert result["public_packet"]["failure_kind"] == "not_installed"


def test_same_recall_id_replays_without_the_provider(db, double_corpus, double):
    ref = _activate(SUMMARIES[0], "ev-1")
    first = _recall(double_corpus, queries=["PR description effect"])
    double.reset_calls()
    second = _recall(double_corpus, queries=["PR description effect"])
    assert second["recall_id"] == first["recall_id"]
    assert [i["memory_ref"] for i in second["items"]] == [ref]
    assert second["replayed"] is True
    assert double.call_count == 0
    services.retire_record(record_ref=ref, principal=f.op(f.RETIRER))
    third = _recall(double_corpus, queries=["PR description effect"])
    assert third["items"] == []


def test_unknown_agent_is_an_error_not_a_guard(db, corpus):
    with pytest.raises(Exception) as exc:
        _recall(corpus, agent_id="ghost")
    assert exc.value.code == "agent_not_registered"


def test_structural_errors_are_errors(db, corpus):
    with pytest.raises(RewardMemoryError) as exc:
        _recall(corpus, mode="vector_scan")
    assert exc.value.field == "mode"
    with pytest.raises(RewardMemoryError) as exc:
        _recall(corpus, limit=500)
    assert exc.value.field == "limit"


# -- the in-process function (turn recall) -------------------------------------------------
def test_recall_guidance_for_one_corpus_surface_and_query(db, corpus, refs):
    guidance = services.recall_guidance(
        goal_id="demo",
        agent_id="author",
        corpus_id="prefs",
        surface=f.SURFACE,
        query="validation commands in the PR description",
    )
    assert guidance.status == "ok"
    assert guidance.provider_calls == 1
    assert guidance.records[0].summary == SUMMARIES[1]
    packet = recall_documents.public_packet(guidance.outcome)
    assert packet["mode"] == "function_boundary"
    assert SUMMARIES[1] not in json.dumps(packet)


def test_recall_guidance_refuses_agents_the_corpus_does_not_allowlist(db, double_corpus, double):
    guidance = services.recall_guidance(
        goal_id="demo", agent_id="reviewer", corpus_id="prefs", surface=f.SURFACE, query="x"
    )
    assert guidance.status == "guard_blocked"
    assert Reason("agent_not_allowlisted", "agent_id") in guidance.reasons
    assert double.call_count == 0
    missing = services.recall_guidance(
        goal_id="demo", agent_id="author", corpus_id="nope", surface=f.SURFACE, query="x"
    )
    assert missing.status == "guard_blocked"
    assert missing.records == []


# -- application receipts -----------------------------------------------------------------
def _application(recall, refs, *, decision="apply", verified=True, **extra):
    doc = {
        "schema_version": "reward_memory_application_v0",
        "recall_id": recall["recall_id"],
        "decision": decision,
        "memory_refs": refs,
        "reasoning_summary": "The effect-first ordering fits this PR.",
        "artifact_verification": {
            "artifact_ref": "pr:proj-a#40",
            "artifact_digest": "sha256:" + "a" * 64,
            "verified": verified,
        },
        **extra,
    }
    return f.applied(document=doc, execute=True)


def test_applied_only_when_attributed_and_the_artifact_is_verified(db, corpus, refs):
    recall = _recall(corpus, queries=["PR description effect"])
    returned = [i["memory_ref"] for i in recall["items"]]
    applied = _application(recall, returned[:1])
    assert applied["status"] == "applied"
    assert applied["reasons"] == []
    assert applied["memory_ref_digests"][0].startswith("sha256:")
    assert returned[0] not in json.dumps(applied)
    unverified = _application(recall, returned[:1], verified=False)
    assert (unverified["status"], unverified["reasons"]) == (
        "not_applied",
        ["artifact_not_verified"],
    )
    foreign = _application(recall, ["rmr_" + "f" * 64])
    assert foreign["status"] == "not_applied"
    assert foreign["reasons"] == ["not_attributed"]
    assert foreign["original_output_kept"] is True
    refuted = _application(recall, returned[:1], decision="refute")
    assert refuted["status"] == "refuted"
    ignored = _application(recall, returned[:1], decision="ignore")
    assert (ignored["status"], ignored["reasons"]) == ("not_applied", ["ignored_by_model"])
    assert ApplicationReceipt.objects.count() == 5


def test_application_receipts_are_idempotent_and_preview_by_default(db, corpus, refs):
    recall = _recall(corpus, queries=["PR description effect"])
    returned = [recall["items"][0]["memory_ref"]]
    doc = {
        "schema_version": "reward_memory_application_v0",
        "recall_id": recall["recall_id"],
        "decision": "apply",
        "memory_refs": returned,
        "reasoning_summary": "Fits.",
        "artifact_verification": {
            "artifact_ref": "pr:1",
            "artifact_digest": "sha256:" + "b" * 64,
            "verified": True,
        },
    }
    preview = f.applied(document=doc)
    assert preview["recorded"] is False
    assert not ApplicationReceipt.objects.exists()
    first = f.applied(document=doc, execute=True)
    assert f.applied(document=doc, execute=True) == first
    assert ApplicationReceipt.objects.count() == 1


def test_applying_an_empty_recall_is_not_applied(db, double_corpus, double):
    recall = _recall(double_corpus)
    receipt = _application(recall, ["rmr_" + "1" * 64])
    assert receipt["status"] == "not_applied"
    assert set(receipt["reasons"]) == {"not_attributed", "recall_not_ok"}


def test_unsafe_application_fields_are_not_recorded(db, corpus, refs):
    recall = _recall(corpus, queries=["PR description effect"])
    receipt = _application(recall, [], model_transcript="everything the model said")
    assert receipt["status"] == "not_applied"
    assert receipt["reasons"] == ["not_public_safe"]
    assert receipt["recorded"] is False
    assert "everything the model said" not in json.dumps(receipt)
    assert not ApplicationReceipt.objects.exists()


def test_unknown_recall_is_not_found(db, corpus):
    with pytest.raises(RewardMemoryError) as exc:
        f.applied(
            document={
                "schema_version": "reward_memory_application_v0",
                "recall_id": "rmc_" + "0" * 64,
            }
        )
    assert exc.value.code == "recall_not_found"


# -- health: five separate states ---------------------------------------------------------
def test_health_states_are_observed_separately(db, corpus):
    health = registry.corpus_health(services.health_facts(corpus))["health"]
    assert [health[k]["value"] for k in health] == [True, False, False, False, False]
    ref = _activate(SUMMARIES[0], "ev-1")
    health = registry.corpus_health(services.health_facts(corpus))["health"]
    assert health["index_present"]["value"] is True
    assert health["result_readback_verified"]["value"] is True
    assert health["retrieval_query_succeeded"]["value"] is False
    recall = _recall(corpus, queries=["PR description effect"])
    health = registry.corpus_health(services.health_facts(corpus))["health"]
    assert health["retrieval_query_succeeded"]["value"] is True
    assert health["memory_applied_with_receipt"]["value"] is False
    _application(recall, [ref])
    health = registry.corpus_health(services.health_facts(corpus))
    assert health["health"]["memory_applied_with_receipt"]["value"] is True
    assert set(health["health"]) == {
        "corpus_present",
        "index_present",
        "retrieval_query_succeeded",
        "result_readback_verified",
        "memory_applied_with_receipt",
    }
    assert health["records"]["active"] == 1


def test_health_reports_an_unreachable_index_without_failing(db, double_corpus, double):
    double.available = False
    health = registry.corpus_health(services.health_facts(double_corpus))["health"]
    assert health["corpus_present"]["value"] is True
    assert health["index_present"] == {
        "value": False,
        "observed_at": None,
        "failure_kind": "unavailable",
    }
