"""LoopX wire contract for Reward Memory: a LoopX host runs the same calls against
``manage.py reward_memory …`` (the in-process CLI runner, exactly as the shell) and the
API, and reads the documents with its own code.

Every case cites the LoopX file (``loopx-project/loopx``) whose test, fixture or
document builder it is built from.
"""

import json
import re

import pytest

from reward_memory.documents import review as review_documents
from tests.helpers import run_cli
from tests.reward_memory import factories as f

BASE = "/api/v1/reward-memory"

# loopx/capabilities/reward_memory/architecture.py: MEMORY_CLASS_IDS
LOOPX_CLASS_IDS = [
    "run_bound_reward",
    "hard_policy",
    "soft_preference",
    "procedural_experience",
    "working_context",
]
# loopx/capabilities/reward_memory/architecture.py: build_reward_memory_architecture_packet
LOOPX_PRECEDENCE = [
    "explicit_action_authority_and_privacy_boundary",
    "active_in_scope_hard_policy",
    "fresh_working_context_and_current_source_of_truth",
    "current_artifact_verified_procedural_experience",
    "active_in_scope_soft_preference",
    "run_bound_reward_as_evidence_only",
]
LOOPX_LIFECYCLE = ["observed", "candidate", "active", "superseded", "revoked", "expired", "retired"]
# loopx/capabilities/reward_memory/candidate_review.py: review_reward_memory_candidate
NEXT_STEP = "caller_uses_declared_corpus_write_authority_then_readback"


def _cli(*argv):
    return run_cli("reward_memory", *argv, "--format", "json")


def _review(decision=None, *extra):
    argv = ["candidate-review", *extra]
    if decision:
        argv += ["--decision", decision]
    return _cli(*argv)


# -- architecture ----------------------------------------------------------------------------
def test_architecture_is_loopx_design_contract():
    # loopx/capabilities/reward_memory/architecture.py (ok, schema_version, status)
    result = _cli("architecture")
    assert result.code == 0
    doc = result.json
    assert (doc["ok"], doc["schema_version"], doc["status"]) == (
        True,
        "reward_memory_architecture_v0",
        "design_contract",
    )


def test_architecture_memory_classes_carry_class_id():
    # loopx/capabilities/reward_memory/architecture.py (_memory_classes: class_id)
    doc = _cli("architecture").json
    assert [c["class_id"] for c in doc["memory_classes"]] == LOOPX_CLASS_IDS
    hard = next(c for c in doc["memory_classes"] if c["class_id"] == "hard_policy")
    assert hard["authority"] == "constraint_or_veto_within_verified_actor_scope"


def test_architecture_precedence_and_lifecycle_are_loopx_ids():
    # loopx/capabilities/reward_memory/architecture.py (precedence, lifecycle_states,
    # required_record_fields)
    doc = _cli("architecture").json
    assert doc["precedence"] == LOOPX_PRECEDENCE
    assert doc["lifecycle_states"] == LOOPX_LIFECYCLE
    assert doc["required_record_fields"][0] == "class_id"
    assert "lifecycle_state" in doc["required_record_fields"]


# -- experiment status -------------------------------------------------------------------------
def test_experiment_status_is_v1_disabled_until_configured(db, agents, host_client):
    # loopx/capabilities/reward_memory/experiment.py (resolve_reward_memory_experiment:
    # base document, `disabled` when the Goal has no enabled route)
    cli = _cli("experiment-status", "--goal-id", "demo", "--agent-id", "author")
    api = host_client("demo", "author").get(f"{BASE}/experiments/demo/author/status/").json()
    for doc in (cli.json, api):
        assert doc["ok"] is True
        assert doc["schema_version"] == "reward_memory_experiment_status_v1"
        assert (doc["status"], doc["available"], doc["enabled"]) == ("disabled", False, False)
        assert (doc["automatic_recall"], doc["automatic_ingest"], doc["fail_open"]) == (
            False,
            False,
            True,
        )
        assert doc["external_writes_performed"] is False
    assert cli.json == api


def test_experiment_status_for_an_unregistered_agent_is_an_error(db, agents):
    # loopx/capabilities/reward_memory/experiment.py ("agent_id is not registered for goal")
    result = _cli("experiment-status", "--goal-id", "demo", "--agent-id", "ghost")
    assert result.code == 2
    assert result.json["ok"] is False
    assert result.json["status"] == "invalid_request"


# -- candidate review ---------------------------------------------------------------------------
def test_candidate_review_default_case_is_an_active_decision(db):
    # loopx/capabilities/reward_memory/cli.py (candidate-review: --case default
    # issue-fix-verified-contributor, --decision default accept) and
    # tests/capabilities/test_reward_memory_decision.py (accept → active, next step)
    result = _review()
    assert result.code == 0, result.stdout
    doc = result.json
    assert doc["ok"] is True
    assert doc["schema_version"] == "reward_memory_candidate_review_v0"
    assert (doc["status"], doc["effective_decision"], doc["guard_passed"]) == (
        "active",
        "accept",
        True,
    )
    assert doc["record"]["lifecycle"] == {"state": "active", "supersedes_refs": []}
    assert doc["persistence_next_step"] == NEXT_STEP
    assert doc["grants_new_action_authority"] is False
    assert doc["external_writes_performed"] is False
    assert doc["adapter"]["schema_version"] == "issue_fix_reward_memory_candidate_adapter_v0"
    assert doc["adapter"]["shared_candidate_ref"] == doc["candidate_ref"]


def test_candidate_review_speaks_loopx_record_adapter_and_review_layout(db):
    # the leg's reward.candidate-review: LoopX's record layout (source_*/*_ref names,
    # surface_ids, reasoning, guard_context, privacy, candidate:<hex>), the adapter's
    # shared_candidate and fields, and the review object
    doc = _review().json
    record = doc["record"]
    assert set(record["source"]) == {"source_kind", "source_ref", "actor_ref", "actor_role"}
    assert record["scope"]["surface_ids"] == ["issue_fix.patch_planning"]
    assert set(record["scope"]) <= {"workspace_ref", "project_ref", "surface_ids", "revision_ref"}
    assert set(record["reasoning"]) == {"summary", "confidence"}
    assert record["guard_context"] == {
        "source_freshness": "current",
        "conflict_state": "clear",
        "current_artifact_verified": True,
    }
    assert record["privacy"] == {"raw_content_captured": False}
    assert re.fullmatch(r"candidate:[0-9a-f]{20}", record["candidate_ref"])
    adapter = doc["adapter"]
    assert (adapter["ok"], adapter["surface_id"], adapter["raw_content_captured"]) == (
        True,
        "issue_fix.patch_planning",
        False,
    )
    assert adapter["issue_ref"] == "github:example/repository#42"
    assert adapter["fresh_execution_context_source"] == "existing_loopx_control_plane"
    shared = adapter["shared_candidate"]
    assert (shared["status"], shared["candidate_persisted"]) == ("review_ready", False)
    assert shared["candidate"]["candidate_ref"] == record["candidate_ref"]
    assert shared["candidate"]["lifecycle"]["state"] == "candidate"
    assert set(doc["review"]) == {"reviewer_ref", "review_ref", "reasoning_summary"}
    # a shipped case's preview shows LoopX's fixture review; our review id stays beside it
    assert doc["review"]["review_ref"] == "review:fixture:accept"
    assert doc["review_id"].startswith("rmrv_")


# loopx/capabilities/reward_memory/candidate_review.py:
# issue_fix_verified_contributor_candidate_fixture, and cli.py's fixture review
LOOPX_FIXTURE_RECORD = {
    "schema_version": "reward_memory_candidate_v0",
    "target_class": "hard_policy",
    "content_summary": "Keep focused fixes within the affected module unless broader "
    "evidence is present.",
    "source": {
        "source_kind": "maintainer_correction",
        "source_ref": "github:example/repository#42:comment:1",
        "actor_ref": "github:user:maintainer",
        "actor_role": "verified_repository_core_contributor",
    },
    "scope": {
        "workspace_ref": "workspace:example",
        "project_ref": "repository:example",
        "surface_ids": ["issue_fix.patch_planning"],
        "revision_ref": "revision:abc123",
    },
    "reasoning": {
        "summary": "The correction consistently constrains issue-fix scope; it does not "
        "grant repository write authority.",
        "confidence": "high",
    },
    "guard_context": {
        "source_freshness": "current",
        "conflict_state": "clear",
        "current_artifact_verified": True,
    },
    "requested_action_scopes": ["issue_fix:scope_selection"],
    "lifecycle": {"state": "active", "supersedes_refs": []},
    "privacy": {"raw_content_captured": False},
    "candidate_ref": "candidate:ac39ee276795688ac3e8",
}
LOOPX_FIXTURE_CHECKPOINT = {
    "verified": True,
    "source_ref": "repository:authority-map",
    "actor_ref": "github:user:maintainer",
    "actor_role": "verified_repository_core_contributor",
    "project_ref": "repository:example",
    "action_scopes": ["issue_fix:scope_selection"],
}


@pytest.mark.parametrize("decision", ["accept", "edit", "reject", "retire", "no_write"])
def test_shipped_case_review_carries_loopx_fixture_values(db, decision):
    # the leg's reward.candidate-review: equal inputs, equal values — LoopX's fixture
    # facts and fixture review (reviewer_ref, review:fixture:<decision>, reasoning)
    doc = _review(decision, "--case", "issue-fix-verified-contributor").json
    assert doc["review"] == {
        "reviewer_ref": "github:user:maintainer",
        "review_ref": f"review:fixture:{decision}",
        "reasoning_summary": "The compact evidence and scope were reviewed.",
    }
    assert doc["reviewer"] is None  # a preview names nobody (labels only)
    assert doc["adapter"]["issue_ref"] == "github:example/repository#42"
    shared = doc["adapter"]["shared_candidate"]
    assert shared["authority_checkpoint"] == LOOPX_FIXTURE_CHECKPOINT
    assert shared["candidate"] == {
        **LOOPX_FIXTURE_RECORD,
        "lifecycle": {"state": "candidate", "supersedes_refs": []},
    }
    record = doc["record"]
    if decision == "accept":
        assert record == LOOPX_FIXTURE_RECORD
    elif decision == "edit":
        assert record["lifecycle"]["supersedes_refs"] == ["candidate:ac39ee276795688ac3e8"]
        assert record["candidate_ref"] == "candidate:39047ef49c8ca34e25cd"
    else:
        assert record["candidate_ref"] == LOOPX_FIXTURE_RECORD["candidate_ref"]


def test_shipped_case_is_authorised_only_by_the_operator_granted_checkpoint(db):
    # seed 003: checkpoints are operator-granted records; the fixture's own
    # ``verified: true`` claim grants nothing once the server record is revoked
    from reward_memory import services

    assert _review("accept").json["guard_passed"] is True
    services.revoke_checkpoint(
        checkpoint_id="repository:authority-map", operator=f.op(f.OWNER), execute=True
    )
    doc = _review("accept").json
    assert (doc["status"], doc["effective_decision"], doc["guard_passed"]) == (
        "guard_blocked",
        "no_write",
        False,
    )
    assert "checkpoint_revoked" in {r["code"] for r in doc["guard"]["reasons"]}


def test_recorded_case_review_names_the_authenticated_reviewer_not_the_fixture(db, corpus):
    # the fixture review is a preview's label: a recorded review is the principal's
    from reward_memory import services
    from reward_memory.domain.inputs import read_case, read_case_review

    doc = review_documents.decision(
        services.review_candidate(
            candidate=read_case("issue-fix-verified-contributor"),
            decision="reject",
            corpus_id="prefs",
            principal=f.op(f.REVIEWER),
            execute=True,
            preview_review=read_case_review("reject")["review"],
        )
    )
    assert doc["recorded"] is True
    assert doc["review"]["reviewer_ref"] == doc["reviewer"] == f.op(f.REVIEWER).actor_ref
    assert doc["review"]["review_ref"] == doc["review_id"]


def test_candidate_review_reject_retires_the_record_without_a_write_step(db):
    # loopx/capabilities/reward_memory/candidate_review.py (reject → rejected,
    # retired_reason rejected_in_review, persistence_next_step none)
    doc = _review("reject").json
    assert doc["status"] == "rejected"
    assert doc["record"]["lifecycle"]["state"] == "retired"
    assert doc["record"]["lifecycle"]["retired_reason"] == "rejected_in_review"
    assert doc["persistence_next_step"] == "none"


def test_candidate_review_edit_uses_the_fixture_edit_and_supersedes_the_old_ref(db):
    # loopx/capabilities/reward_memory/cli.py (edit without replacement text uses the
    # fixture's edited_content_summary) and candidate_review.py (edit → review_ready,
    # supersedes_refs = [old candidate_ref])
    accept = _review("accept").json
    doc = _review("edit").json
    assert doc["status"] == "review_ready"
    # LoopX's refs (candidate:<hex>): the edit supersedes the accepted candidate's
    assert doc["record"]["lifecycle"]["supersedes_refs"] == [accept["record"]["candidate_ref"]]
    assert doc["record"]["content_summary"].startswith("Keep focused fixes within the affected")
    assert doc["record"]["candidate_ref"] != accept["record"]["candidate_ref"]
    assert doc["persistence_next_step"] == "none"


def test_candidate_review_no_write_and_retire(db):
    # loopx/capabilities/reward_memory/candidate_review.py (no_write →
    # no_write_rationale; retire → retired with the persistence next step)
    no_write = _review("no_write").json
    assert no_write["status"] == "no_write"
    assert no_write["record"]["lifecycle"]["retired_reason"] == "no_write_rationale"
    retire = _review("retire").json
    assert retire["status"] == "retired"
    assert retire["record"]["lifecycle"]["retired_reason"] == "reviewed_retirement"
    assert retire["persistence_next_step"] == NEXT_STEP


def test_candidate_review_without_verified_authority_is_guard_blocked_no_write(db):
    # loopx/capabilities/reward_memory/candidate_review.py (_guard: unverified checkpoint
    # → guard_blocked; accept collapses to no_write, lifecycle stays candidate)
    doc = _review("accept", "--case", "issue-fix-unverified-contributor").json
    assert (doc["status"], doc["effective_decision"], doc["guard_passed"]) == (
        "guard_blocked",
        "no_write",
        False,
    )
    assert doc["record"]["lifecycle"]["state"] == "candidate"
    assert doc["persistence_next_step"] == "none"


def test_candidate_review_document_is_the_same_over_the_api(db, corpus, host_client):
    # loopx/capabilities/reward_memory/candidate_review.py (the review document a host
    # reads; here the API and the command must agree field by field)
    body = {"candidate": f.candidate(), "decision": "reject", "corpus_id": "prefs"}
    api = host_client("demo", "author").post(
        f"{BASE}/candidates/review/", data=json.dumps(body), content_type="application/json"
    )
    doc = api.json()
    assert (doc["ok"], doc["status"], doc["persistence_next_step"]) == (True, "rejected", "none")
    assert doc["record"]["lifecycle"]["retired_reason"] == "rejected_in_review"


# -- ingest-event ---------------------------------------------------------------------------------
@pytest.fixture
def wrapper(tmp_path):
    def write(document):
        path = tmp_path / "ingest.json"
        path.write_text(json.dumps(document))
        return str(path)

    return write


def test_ingest_execute_requires_an_enabled_experiment_route(db, corpus, wrapper):
    # loopx/capabilities/reward_memory/cli.py ("--execute requires an enabled experiment
    # route via --goal-id and --agent-id")
    result = _cli("ingest-event", "--input", wrapper({"event": f.scoped_event()}), "--execute")
    assert result.code == 2
    assert result.json["status"] == "invalid_request"
    assert "requires an enabled experiment route" in result.json["error"]
    # The service names fields; the CLI shows them as the flags typed, LoopX's words.
    assert result.json["error"] == (
        "--execute requires an enabled experiment route via --goal-id and --agent-id"
    )


def test_ingest_goal_and_agent_must_be_supplied_together(db, corpus, wrapper):
    # loopx/capabilities/reward_memory/cli.py ("--goal-id and --agent-id must be supplied
    # together")
    result = _cli(
        "ingest-event", "--input", wrapper({"event": f.scoped_event()}), "--goal-id", "demo"
    )
    assert result.code == 2
    assert result.json["error"] == "--goal-id and --agent-id must be supplied together"


def test_ingest_wrapper_refuses_unsupported_fields_by_name(db, corpus, wrapper):
    # loopx/capabilities/reward_memory/cli.py ("ingest input contains unsupported fields";
    # raw comments are rejected)
    document = {"event": f.scoped_event(), "raw_comment": "verbatim maintainer text"}
    result = _cli("ingest-event", "--input", wrapper(document))
    assert result.code == 2
    assert (result.json["status"], result.json["field"]) == ("invalid_request", "raw_comment")
    assert "verbatim maintainer text" not in result.stdout


def test_ingest_wrapper_without_execute_is_a_no_write_evaluation(db, corpus, wrapper):
    # loopx/capabilities/reward_memory/cli.py (without --execute: no-write evaluation
    # returning reward_memory_ingest_receipt_v0)
    document = {
        "adapter": "scoped_feedback",
        "event": f.scoped_event(),
        "observed_at": "2026-11-30T09:00:00Z",
    }
    result = _cli("ingest-event", "--input", wrapper(document))
    assert result.code == 0, result.stdout
    assert result.json["schema_version"] == "reward_memory_ingest_receipt_v0"
    assert (result.json["status"], result.json["executed"]) == ("planned", False)
    from reward_memory.models import IngestEvent, MemoryRecord

    assert not IngestEvent.objects.exists()
    assert not MemoryRecord.objects.exists()


def test_ingest_wrapper_adapter_must_match_the_event(db, corpus, wrapper):
    # loopx/capabilities/reward_memory/cli.py ("adapter is unsupported; semantic routing
    # is intentionally not inferred")
    document = {"adapter": "issue_fix_maintainer_feedback", "event": f.scoped_event()}
    result = _cli("ingest-event", "--input", wrapper(document))
    assert (result.code, result.json["field"]) == (2, "adapter")


def test_ingest_execute_without_an_operator_registered_route_is_refused(
    db, corpus, wrapper, host_client
):
    # tests/capabilities/test_reward_memory_experiment.py (execute resolves the Goal/Agent
    # route; an agent without an enabled route cannot write) — our route is the
    # operator-registered corpus allowlist row
    argv = ["ingest-event", "--input", wrapper({"event": f.scoped_event()}), "--execute"]
    result = _cli(*argv, "--goal-id", "demo", "--agent-id", "reviewer")
    assert result.code == 2
    assert "requires an enabled experiment route" in result.json["error"]
    api = host_client("demo", "reviewer").post(
        f"{BASE}/ingest/",
        data=json.dumps(
            {"goal_id": "demo", "agent_id": "reviewer", "event": f.scoped_event(), "execute": True}
        ),
        content_type="application/json",
    )
    assert api.status_code == 403
    assert "requires an enabled experiment route" in api.json()["error"]


# -- recall: LoopX's request packet -------------------------------------------------------------
def _loopx_packet(corpus, *, conflict_state="clear", query="PR description effect first"):
    # loopx/capabilities/reward_memory/application.py (build_reward_memory_recall_request:
    # the packet a LoopX host sends)
    surface = corpus.surfaces[0]
    return {
        "ok": True,
        "schema_version": "reward_memory_recall_request_v0",
        "status": "ready",
        "corpus": {"corpus_id": corpus.corpus_id, "class_id": corpus.memory_class},
        "request": {
            "workspace_ref": "ws",
            "project_ref": corpus.project,
            "surface_id": surface,
            "revision_ref": None,
            "mode": "function_boundary",
            "queries": [{"query": query, "query_summary": "pr description preferences"}],
            "limit": 4,
            "observed_at": "2026-12-01T12:00:00Z",
            "conflict_state": conflict_state,
            "query_kind": "business_recall",
            "query_evidence": [],
        },
        "read_authority_checkpoint": {
            "verified": True,
            "corpus_id": corpus.corpus_id,
            "workspace_ref": "ws",
            "project_ref": corpus.project,
            "surface_id": surface,
            "read_authority": "agent_read",
            "source_ref": "allowlist:demo/author",
        },
        "guard": {"passed": True, "reason_codes": []},
        "automatic_recall": False,
        "provider_call_performed": False,
        "external_writes_performed": False,
        "raw_content_captured": False,
    }


def test_recall_accepts_loopx_packet_and_answers_reward_memory_recall_v0(activated, wrapper):
    # loopx/capabilities/reward_memory/application.py (execute_reward_memory_recall:
    # reward_memory_recall_v0 with status completed, results without exposed content)
    path = wrapper(_loopx_packet(activated))
    result = _cli(
        "recall", "--input", path, "--goal-id", "demo", "--agent-id", "author", "--execute"
    )
    assert result.code == 0, result.stdout
    doc = result.json
    assert (doc["ok"], doc["schema_version"], doc["status"]) == (
        True,
        "reward_memory_recall_v0",
        "completed",
    )
    assert doc["result_count"] == 1
    assert doc["results"][0]["content_exposed"] is False
    assert doc["results"][0]["target_class"] == "soft_preference"
    assert (doc["provider_call_count"], doc["fail_open"], doc["automatic_recall"]) == (
        1,
        True,
        False,
    )
    assert doc["external_writes_performed"] is False


def test_recall_loopx_packet_with_an_unresolved_conflict_stops_before_the_provider(
    activated, double, wrapper
):
    # loopx/capabilities/reward_memory/application.py (conflict_state != clear →
    # guard_blocked with reason codes, no provider call)
    path = wrapper(_loopx_packet(activated, conflict_state="unresolved"))
    doc = _cli(
        "recall", "--input", path, "--goal-id", "demo", "--agent-id", "author", "--execute"
    ).json
    assert doc["status"] == "guard_blocked"
    assert "unresolved_conflict" in doc["reason_codes"]
    assert doc["provider_call_count"] == 0
    assert double.call_count == 0


def test_recall_loopx_packet_over_the_api_takes_the_agent_from_the_token(
    activated, host_client, other_goal_client
):
    # loopx/capabilities/reward_memory/application.py (the same packet over the API; the
    # Goal/Agent is the token's, never the packet's)
    body = {**_loopx_packet(activated), "execute": True}
    response = host_client("demo", "author").post(
        f"{BASE}/recall/", data=json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 200
    assert (response.json()["schema_version"], response.json()["status"]) == (
        "reward_memory_recall_v0",
        "completed",
    )
    stranger = other_goal_client.post(
        f"{BASE}/recall/", data=json.dumps(body), content_type="application/json"
    ).json()
    assert stranger["status"] == "guard_blocked"
    assert stranger["reason_codes"] == ["corpus_not_registered"]
    assert stranger["result_count"] == 0


@pytest.fixture
def other_goal_client(db, host_client):
    from tests.factories import AgentFactory, GoalFactory

    AgentFactory(goal=GoalFactory(goal_id="other"), agent_id="author")
    return host_client("other", "author")


# -- ingest-event: LoopX's scoped feedback event ---------------------------------------------------
def _loopx_event(**overrides):
    # loopx/capabilities/reward_memory/scoped_feedback.py (_EVENT_FIELDS, _SOURCE_FIELDS,
    # _REASONING_FIELDS, _GUARD_FIELDS: the event a LoopX module sends)
    event = {
        "schema_version": "scoped_feedback_reward_memory_event_v0",
        "feedback_ref": "feedback:proj-a/pr/42",
        "workspace_ref": "ws",
        "project_ref": f.PROJECT,
        "surface_id": f.SURFACE,
        "revision_ref": None,
        "target_class": "soft_preference",
        "content_summary": "Lead PR descriptions with the user-visible effect.",
        "source": {
            "source_kind": "maintainer_feedback",
            "source_ref": "review:proj-a#42/r-1",
            "actor_ref": "user:maint-1",
            "actor_role": "maintainer",
        },
        "reasoning": {
            "summary": "Two maintainers asked for the effect first.",
            "confidence": "medium",
        },
        "guard_context": {
            "source_freshness": "current",
            "conflict_state": "clear",
            "current_artifact_verified": True,
        },
        "requested_action_scopes": [],
        "raw_content_captured": False,
    }
    event = {k: val for k, val in event.items() if val is not None}
    return f.merge(event, overrides)


ROUTE = ["--goal-id", "demo", "--agent-id", "author"]
OBSERVED = "2026-11-30T09:00:00Z"


def test_ingest_accepts_loopx_scoped_feedback_event_on_the_operator_route(db, corpus, wrapper):
    # tests/capabilities/test_reward_memory_experiment.py (_experiment: the route input
    # {adapter, event, observed_at}) and scoped_feedback.py (field mapping)
    document = {"adapter": "scoped_feedback", "event": _loopx_event(), "observed_at": OBSERVED}
    result = _cli("ingest-event", "--input", wrapper(document), *ROUTE, "--execute")
    assert result.code == 0, result.stdout
    assert (result.json["status"], result.json["memory_available_for_recall"]) == (
        "activated",
        True,
    )
    assert result.json["corpus_id"] == "prefs"


def test_ingest_accepts_loopx_observed_at_with_an_offset_as_the_same_utc_instant(
    db, corpus, wrapper
):
    # loopx/capabilities/reward_memory/application.py (_observed_at: any ISO timestamp
    # with a timezone); the leg's `reward.ingest-event/observed-at-offset-form`
    offset = {
        "adapter": "scoped_feedback",
        "event": _loopx_event(),
        "observed_at": "2026-11-30T10:00:00+01:00",
    }
    result = _cli("ingest-event", "--input", wrapper(offset), *ROUTE, "--execute")
    assert result.code == 0, result.stdout
    assert result.json["status"] == "activated"
    zulu = {**offset, "observed_at": OBSERVED}
    again = _cli("ingest-event", "--input", wrapper(zulu), *ROUTE, "--execute")
    # the same instant is the same event: a replay of the stored receipt
    assert (again.json["receipt_id"], again.json["replayed"]) == (result.json["receipt_id"], True)
    plain = {**offset, "observed_at": "2026-07-16T00:30:00+00:00", "event": f.scoped_event()}
    planned = _cli("ingest-event", "--input", wrapper(plain), *ROUTE)
    assert (planned.code, planned.json["status"]) == (0, "planned"), planned.stdout


@pytest.mark.parametrize("value", ["2026-07-16T00:30:00", "2026-07-16", "yesterday"])
def test_ingest_refuses_an_observed_at_without_a_timezone(db, corpus, wrapper, value):
    document = {"adapter": "scoped_feedback", "event": f.scoped_event(), "observed_at": value}
    result = _cli("ingest-event", "--input", wrapper(document), *ROUTE)
    assert (result.code, result.json["field"]) == (2, "observed_at")


def test_loopx_event_unsupported_field_is_invalid_request_naming_it(db, corpus, wrapper):
    # loopx/capabilities/reward_memory/scoped_feedback.py (_strict_object: "contains
    # unsupported fields")
    event = {**_loopx_event(), "raw_comment": "verbatim"}
    document = {"event": event, "observed_at": OBSERVED}
    result = _cli("ingest-event", "--input", wrapper(document), *ROUTE)
    assert result.code == 2
    assert (result.json["status"], result.json["field"]) == ("invalid_request", "event.raw_comment")


def test_loopx_full_packet_without_execute_is_a_no_write_evaluation(db, corpus, wrapper):
    # loopx/capabilities/reward_memory/cli.py (no route: {adapter, event, corpus,
    # standing_policy, provider_binding, observed_at} is a no-write evaluation)
    document = {
        "adapter": "scoped_feedback",
        "event": _loopx_event(),
        "corpus": {"corpus_id": "prefs"},
        "standing_policy": {"policy_id": "policy:example"},
        "provider_binding": {"corpus_id": "prefs", "provider_id": "local"},
        "observed_at": OBSERVED,
    }
    result = _cli("ingest-event", "--input", wrapper(document))
    assert result.code == 0, result.stdout
    assert (result.json["schema_version"], result.json["status"]) == (
        "reward_memory_ingest_receipt_v0",
        "planned",
    )
    from reward_memory.models import MemoryRecord

    assert not MemoryRecord.objects.exists()


def test_loopx_full_packet_receipt_carries_loopx_receipt_fields(db, corpus, wrapper):
    # loopx/capabilities/reward_memory/ingestion.py (the receipt's base fields) and
    # scoped_feedback.py (adapter/event schema, feedback_ref); the leg's
    # `reward.loopx-ingest-packet`
    document = {
        "adapter": "scoped_feedback",
        "event": _loopx_event(),
        "corpus": {"corpus_id": "prefs"},
        "observed_at": OBSERVED,
    }
    receipt = _cli("ingest-event", "--input", wrapper(document)).json
    assert receipt["ok"] is True
    assert receipt["guard"]["passed"] is True
    assert receipt["surface_ids"] == [receipt["surface"]]
    assert receipt["feedback_ref"] == _loopx_event()["feedback_ref"]
    assert {
        key: receipt[key]
        for key in (
            "grants_new_action_authority",
            "raw_content_captured",
            "raw_provider_payload_captured",
            "external_writes_performed",
            "provider_failure_is_user_gate",
            "fail_open",
            "adapter_schema_version",
            "event_schema_version",
            "next_reward_memory_call",
        )
    } == {
        "grants_new_action_authority": False,
        "raw_content_captured": False,
        "raw_provider_payload_captured": False,
        "external_writes_performed": False,
        "provider_failure_is_user_gate": False,
        "fail_open": True,
        "adapter_schema_version": "scoped_feedback_reward_memory_candidate_adapter_v0",
        "event_schema_version": "scoped_feedback_reward_memory_event_v0",
        "next_reward_memory_call": "explicit_function_boundary_recall",
    }


def test_loopx_hard_policy_event_gets_no_authority_from_the_standing_policy(db, agents, wrapper):
    # loopx/capabilities/reward_memory/scoped_feedback.py derives a hard_policy
    # checkpoint from its standing policy; here authority is never derived (issue 9)
    f.register(
        "policy",
        memory_class="hard_policy",
        agents=[("demo", "author")],
        policy_kwargs={
            "roles": ["core_contributor"],
            "action_scopes": ["issue_fix.request_changes"],
        },
    )
    event = _loopx_event(
        target_class="hard_policy",
        source={"actor_role": "core_contributor"},
        requested_action_scopes=["issue_fix.request_changes"],
    )
    result = _cli(
        "ingest-event",
        "--input",
        wrapper({"event": event, "observed_at": OBSERVED}),
        *ROUTE,
        "--execute",
    )
    assert result.json["status"] == "guard_blocked"
    assert "checkpoint_missing" in {r["code"] for r in result.json["guard"]["reasons"]}


def test_loopx_event_guard_context_maps_onto_guards(db, corpus, wrapper):
    # loopx/capabilities/reward_memory/candidate_review.py (_guard: stale source and an
    # unresolved conflict block)
    event = _loopx_event(
        guard_context={"source_freshness": "stale", "conflict_state": "unresolved"}
    )
    result = _cli(
        "ingest-event", "--input", wrapper({"event": event, "observed_at": OBSERVED}), *ROUTE
    )
    codes = {r["code"] for r in result.json["guard"]["reasons"]}
    assert {"source_not_current", "unresolved_conflict"} <= codes


def test_ingest_accepts_loopx_issue_fix_event_through_the_issue_fix_adapter(db, corpus, wrapper):
    # tests/capabilities/test_reward_memory_decision.py helper `event()` and
    # loopx/capabilities/issue_fix/reward_memory.py (_EVENT_FIELDS of
    # issue_fix_reward_memory_event_v0: issue_ref, repository_ref, …)
    event = _loopx_event()
    event.pop("feedback_ref")
    event.pop("project_ref")
    event.update(
        schema_version="issue_fix_reward_memory_event_v0",
        issue_ref="issue:proj-a#42",
        repository_ref=f.PROJECT,
        revision_ref="rev-1",
    )
    document = {"adapter": "issue_fix_maintainer_feedback", "event": event, "observed_at": OBSERVED}
    result = _cli("ingest-event", "--input", wrapper(document), *ROUTE, "--execute")
    assert result.code == 0, result.stdout
    assert (result.json["adapter"], result.json["status"]) == (
        "issue_fix_maintainer_feedback",
        "activated",
    )
    wrong = _cli(
        "ingest-event",
        "--input",
        wrapper({**document, "adapter": "scoped_feedback"}),
        *ROUTE,
    )
    assert (wrong.code, wrong.json["field"]) == (2, "adapter")


def test_api_ingest_accepts_the_loopx_event_layout(db, corpus, host_client):
    # tests/capabilities/test_reward_memory_experiment.py (_experiment: {adapter, event,
    # observed_at} on the Goal/Agent route), over the API with the Agent's token
    body = {
        "goal_id": "demo",
        "agent_id": "author",
        "adapter": "scoped_feedback",
        "event": _loopx_event(),
        "observed_at": OBSERVED,
        "execute": True,
    }
    response = host_client("demo", "author").post(
        f"{BASE}/ingest/", data=json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "activated"
    bad = {**body, "event": {**_loopx_event(), "raw_comment": "x"}}
    refused = host_client("demo", "author").post(
        f"{BASE}/ingest/", data=json.dumps(bad), content_type="application/json"
    )
    assert refused.status_code == 400
    assert refused.json()["field"] == "event.raw_comment"


def test_unsupported_field_names_that_look_like_paths_are_not_echoed(db, corpus, wrapper):
    # loopx/capabilities/reward_memory/cli.py (unsupported fields are refused); our
    # privacy rule: error messages never carry a local path
    document = {"event": f.scoped_event(), "/home/alice/.ssh/id_rsa": 1}
    result = _cli("ingest-event", "--input", wrapper(document))
    assert result.code == 2
    assert "/home/alice" not in result.stdout


@pytest.mark.parametrize(
    ("checkpoint_id", "scope", "ok"),
    [
        ("repository:maintainers", "issue_fix:scope_selection", True),
        ("plain-id", "issue_fix.request_reproduction", True),
        ("https://evil.example/x", "issue_fix:scope_selection", False),
        ("repository:writers", "issue_fix:write", False),  # forbidden family word
    ],
)
def test_checkpoint_grant_takes_loopx_id_and_scope_forms(db, checkpoint_id, scope, ok):
    # LoopX's fixture authority map: `<kind>:<name>` ids and `:`-joined scope words;
    # a URL is never an id, and a forbidden family is caught in any word
    result = _cli(
        "checkpoint", "grant", "--checkpoint-id", checkpoint_id, "--project",
        "repository:example", "--subject", "github:user:other", "--role", "maintainer",
        "--action-scope", scope, "--actor", f.OWNER,
    )  # fmt: skip
    assert (result.code == 0) is ok, result.stdout
    if not ok:
        assert result.json["ok"] is False
