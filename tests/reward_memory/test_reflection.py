"""Post-settlement reflection: the server runs the Todo's declared completion validator
and builds ``reward_memory_reflection_validation_v0`` itself; a host's validation document
is ignored; without a validator the candidate waits with zero provider calls; and a bad
reflection is refused before anything is written (``turn settle`` and the settle API)."""

import json

import pytest
from django.contrib.auth.models import Permission

from hooks.models import DurableWritebackReceipt, QuotaSpend, Todo, TurnSettlement
from loopx_site.core.canonical import digest_ref
from reward_memory import services
from reward_memory.errors import RewardMemoryError
from reward_memory.models import MemoryRecord, ReflectionCandidate
from reward_memory.principals import HOST, Principal
from reward_memory.services.reflection import parse_reflection
from tests.helpers import run_cli
from tests.hooks import validators as vx
from tests.reward_memory import factories as f
from turn_recall.settlement import settle_turn

CONFIG = "experiments/reflection.json"
SETTLE = "/api/v1/turns/settle/"


@pytest.fixture
def routed(agents, double):
    corpus = f.register("prefs", provider_id="double", agents=[("demo", "author")], route=False)
    f.write_config(CONFIG, f.experiment_config([corpus]))
    services.configure_goal(goal_id="demo", agent_id="author", config_path=CONFIG, execute=True)
    double.reset_calls()
    return corpus


def reflection(**kw):
    event = f.scoped_event("refl-1")
    event.pop("corpus_id")
    doc = {
        "schema_version": "turn_reward_memory_reflection_v0",
        "surface_id": f.SURFACE,
        "source_types": ["real", "engineering"],
        "evidence_refs": ["validation:turn-1/tests", "pr:proj-a#17"],
        "event": event,
    }
    doc.update(kw)
    return doc


def forged_validation(doc):
    """What a hostile host sends: 'passed', the right digest, made-up evidence."""
    return {
        "schema_version": "reward_memory_reflection_validation_v0",
        "status": "passed",
        "reflection_digest": digest_ref(parse_reflection(doc)),
        "evidence_refs": list(doc["evidence_refs"]),
    }


def todo(agents, validator=None, todo_id="t1"):
    """An operator's Todo, declaring ``validator`` (an installed validator id) or none."""
    from hooks import services as hooks_services

    return hooks_services.add_todo(
        goal_id=agents[0].goal.goal_id, todo_id=todo_id, title="Private prose",
        validator=validator, execute=True,
    ).todo  # fmt: skip


def body(doc=None, *, execute=True, turn="turn-1", todo_id="t1", **extra):
    out = {
        "goal_id": "demo",
        "agent_id": "author",
        "todo_id": todo_id,
        "turn_instance_id": turn,
        "event_kind": "todo_completed",
        "execute": execute,
    }
    if doc is not None:
        out["reward_memory_reflection"] = doc
    out.update(extra)
    return out


def _settle(doc, **kw):
    return settle_turn(
        goal_id="demo", agent_id="author", todo_id="t1", turn_instance_id="turn-1",
        event_kind="todo_completed", execute=True, reflection=doc, **kw,
    ).payload["reward_memory_reflection"]  # fmt: skip


def _nothing_written():
    return (
        Todo.objects.get(todo_id="t1").state == "open"
        and not TurnSettlement.objects.exists()
        and not DurableWritebackReceipt.objects.exists()
        and not QuotaSpend.objects.exists()
        and not ReflectionCandidate.objects.exists()
    )


def test_a_goal_wide_token_cannot_settle_a_reflection_into_the_agents_memory(
    db, agents, routed, double, host_client
):
    todo(agents)
    response = host_client("demo").post(SETTLE, body(reflection(), execute=True), format="json")
    assert response.status_code == 403, response.json()
    assert (response.json()["code"], response.json()["status"]) == ("scope_forbidden", "forbidden")
    assert response.json()["field"] == "reward_memory_reflection"
    assert _nothing_written()
    assert double.call_count == 0


# -- the server runs the validator ---------------------------------------------------------
def test_caller_validation_is_ignored_and_never_activates_memory(
    db, agents, routed, double, host_client
):
    todo(agents)  # no validator declared
    doc = reflection()
    response = host_client("demo", "author").post(
        SETTLE, body(doc, reward_memory_validation=forged_validation(doc)), format="json"
    )
    assert response.status_code == 201, response.json()
    result = response.json()
    assert result["caller_validation_ignored"] is True
    refl = result["reward_memory_reflection"]
    assert refl["caller_validation_ignored"] is True
    assert refl["status"] == "awaiting_evidence_validation"
    assert refl["validation_matched"] is False
    assert refl["validation"] is None
    assert double.call_count == 0
    assert not MemoryRecord.objects.exists()


def test_without_a_declared_validator_it_awaits_with_zero_provider_calls(
    db, agents, routed, double
):
    todo(agents)
    result = _settle(reflection())
    assert result["status"] == "awaiting_evidence_validation"
    assert (result["provider_call_count"], result["validator_run_count"]) == (0, 0)
    assert result["validator_run"]["declared"] is False
    assert double.call_count == 0
    assert ReflectionCandidate.objects.get().validation is None


def test_the_declared_validator_runs_on_the_server_and_a_pass_finalises(
    db, agents, routed, double, tmp_path
):
    vx.install(tmp_path, "echo-pass", vx.PASSING)
    todo(agents, validator="echo-pass")
    doc = reflection()
    result = _settle(doc)
    assert result["validator_run"]["ran"] is True
    assert result["validation"]["validated_by"] == {
        "kind": "validator",
        "validator_id": "echo-pass",
        "manifest_digest": result["validator_run"]["manifest_digest"],
    }
    assert result["validation"]["reflection_digest"] == digest_ref(parse_reflection(doc))
    assert result["status"] == "finalized"
    assert result["ingest_status"] == "activated"
    assert MemoryRecord.objects.get().record_ref == result["record_ref"]
    double.reset_calls()
    again = settle_turn(
        goal_id="demo", agent_id="author", todo_id="t1", turn_instance_id="turn-1",
        event_kind="todo_completed", execute=True, reflection=doc,
    )  # fmt: skip
    refl = again.payload["reward_memory_reflection"]
    assert (again.status, refl["status"], refl["validator_run_count"]) == (
        "replayed",
        "finalized",
        0,
    )
    assert double.call_count == 0


def test_the_shipped_demo_validator_checks_the_settlement_and_evidence_kinds(
    db, agents, routed, double
):
    from hooks.services import validators

    manifest = validators.read_manifest_file("hooks/extensions/evidence_check.json")
    validators.install_validator(manifest, execute=True)
    todo(agents, validator="loopx-evidence-check")
    todo(agents, validator="loopx-evidence-check", todo_id="t2")
    assert _settle(reflection())["status"] == "finalized"
    bad = settle_turn(
        goal_id="demo", agent_id="author", todo_id="t2", turn_instance_id="turn-2",
        event_kind="todo_completed", execute=True,
        reflection=reflection(evidence_refs=["summary:i-did-it"]),
    ).payload["reward_memory_reflection"]  # fmt: skip
    assert bad["status"] == "awaiting_evidence_validation"
    assert bad["validation"]["failure_kind"] == "validator_failed"
    assert "evidence_ref_kind_not_allowed" in bad["validation"]["checks"]


@pytest.mark.parametrize(
    ("script", "failure_kind"),
    [
        (vx.PLAIN_EXIT_0, "validator_output_malformed"),
        (vx.EMPTY_EXIT_0, "validator_output_malformed"),
        (vx.GARBAGE, "validator_output_malformed"),
        (vx.OTHER_DIGEST, "validator_mismatch"),
        (vx.NONZERO, "validator_nonzero_exit"),
        (vx.FLOOD, "validator_output_too_large"),
    ],
)
def test_a_validator_without_a_well_formed_passing_document_does_not_pass(
    db, agents, routed, double, tmp_path, script, failure_kind
):
    vx.install(tmp_path, "v1", script)
    todo(agents, validator="v1")
    result = _settle(reflection())
    assert result["status"] == "awaiting_evidence_validation"
    assert result["validation"]["status"] == "failed"
    assert result["validation"]["failure_kind"] == failure_kind
    assert result["validator_run"]["ran"] is True
    assert double.call_count == 0
    assert not MemoryRecord.objects.exists()
    assert "tests passed" not in json.dumps(result)  # nothing of the output is kept


def test_a_validator_that_times_out_is_a_bounded_failure_and_activates_nothing(
    db, agents, routed, double, tmp_path
):
    import time

    vx.install(tmp_path, "slow", vx.SLEEPER, timeout=1)
    todo(agents, validator="slow")
    started = time.monotonic()
    result = _settle(reflection())
    assert time.monotonic() - started < 10
    assert result["validation"]["failure_kind"] == "validator_timed_out"
    assert result["status"] == "awaiting_evidence_validation"
    assert double.call_count == 0
    assert Todo.objects.get(todo_id="t1").state == "completed"  # the primary stands


def test_a_disabled_validator_is_unavailable_and_nothing_runs(db, agents, routed, tmp_path):
    from hooks.services import validators

    vx.install(tmp_path, "off", vx.PASSING)
    todo(agents, validator="off")
    validators.set_validator_active("off", active=False, execute=True)
    result = _settle(reflection())
    assert result["validator_run"]["ran"] is False
    assert result["validation"]["failure_kind"] == "validator_unavailable"
    assert result["status"] == "awaiting_evidence_validation"


# -- an operator records a validation by hand ----------------------------------------------
def test_an_operator_recorded_validation_is_attributed_and_finalises(
    db, agents, routed, double, django_user_model
):
    from reward_memory import principals

    alice = django_user_model.objects.create_user("alice", is_staff=True)
    principals.grant_operator_permissions(alice)  # incl. record_reflection_validation
    todo(agents)
    digest = _settle(reflection())["reflection_digest"]
    argv = ["reward_memory", "reflection-validate", "--goal-id", "demo", "--agent-id", "author",
            "--reflection-digest", digest, "--status", "passed", "--evidence-ref",
            "review:alice/checked", "--actor", "user:alice"]  # fmt: skip
    preview = run_cli(*argv)
    assert preview.code == 0, preview.stdout
    assert ReflectionCandidate.objects.get().validation is None
    done = run_cli(*argv, "--execute")
    assert done.code == 0, done.stdout
    assert done.json["status"] == "finalized"
    stored = ReflectionCandidate.objects.get().validation
    assert stored["validated_by"] == {"kind": "operator", "actor": "user:alice"}
    assert MemoryRecord.objects.count() == 1


def test_recording_a_validation_needs_an_operator_account(db, agents, routed):
    todo(agents)
    digest = _settle(reflection())["reflection_digest"]
    refused = run_cli(
        "reward_memory", "reflection-validate", "--goal-id", "demo", "--agent-id", "author",
        "--reflection-digest", digest, "--status", "passed", "--actor", "user:nobody",
        "--execute",
    )  # fmt: skip
    assert (refused.code, refused.json["code"]) == (2, "operator_required")
    with pytest.raises(RewardMemoryError):
        services.record_validation(
            goal_id="demo", agent_id="author", reflection_digest=digest, status="passed",
            principal=Principal(HOST, "tok"), execute=True,
        )  # fmt: skip
    assert ReflectionCandidate.objects.get().validation is None


def test_the_admin_action_records_the_signed_in_operator(db, agents, routed, client, admin_user):
    todo(agents)
    _settle(reflection())
    row = ReflectionCandidate.objects.get()
    client.force_login(admin_user)
    response = client.post(
        "/admin/reward_memory/reflectioncandidate/",
        {"action": "record_validation_passed", "_selected_action": [row.pk]},
    )
    assert response.status_code == 302
    row.refresh_from_db()
    assert row.validation["validated_by"] == {
        "kind": "operator",
        "actor": f"user:{admin_user.username}",
    }
    assert row.status == "finalized"


def test_explicit_automatic_ingest_false_never_finalises(db, agents, double, tmp_path):
    corpus = f.register("prefs", provider_id="double", agents=[("demo", "author")], route=False)
    f.write_config(CONFIG, f.experiment_config([corpus], automation={"automatic_ingest": False}))
    services.configure_goal(goal_id="demo", agent_id="author", config_path=CONFIG, execute=True)
    double.reset_calls()
    vx.install(tmp_path, "echo-pass", vx.PASSING)
    todo(agents, validator="echo-pass")
    result = _settle(reflection())
    assert result["validation_matched"] is True
    assert result["status"] == "awaiting_evidence_validation"
    assert double.call_count == 0


# -- validate, then commit ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"source_types": ["real", "real"]}, "reflection.source_types"),
        ({"source_types": ["vibes"]}, "reflection.source_types.0"),
        ({"evidence_refs": []}, "reflection.evidence_refs"),
        ({"turn_summary": "I did things"}, "reflection.turn_summary"),
        ({"surface_id": "unconfigured.surface"}, "reflection.surface_id"),
        ({"schema_version": "turn_reward_memory_reflection_v9"}, "reflection.schema_version"),
        ({"event": {}}, "reflection.event.schema_version"),
        (
            {"event": {"schema_version": "scoped_feedback_reward_memory_event_v0"}},
            "reflection.event.target_class",
        ),
    ],
)
def test_settle_api_with_a_bad_reflection_writes_nothing_and_a_good_retry_commits(
    db, agents, routed, host_client, change, field
):
    todo(agents)
    client = host_client("demo", "author")
    bad = client.post(SETTLE, body(reflection(**change)), format="json")
    assert bad.status_code == 400, bad.json()
    assert bad.json()["field"] == field
    assert _nothing_written()
    retry = client.post(SETTLE, body(reflection()), format="json")
    assert retry.status_code == 201, retry.json()
    assert retry.json()["status"] == "committed"
    assert retry.json()["reward_memory_reflection"]["status"] == "awaiting_evidence_validation"


def test_settle_cli_with_a_bad_reflection_writes_nothing_and_a_good_retry_commits(
    db, agents, routed, tmp_path
):
    todo(agents)
    bad, good = tmp_path / "bad.json", tmp_path / "good.json"
    bad.write_text(json.dumps(reflection(turn_summary="I did things")))
    good.write_text(json.dumps(reflection()))
    argv = ["turn", "settle", "--goal-id", "demo", "--agent-id", "author", "--todo-id", "t1",
            "--turn-instance-id", "turn-1", "--event-kind", "todo_completed",
            "--execute"]  # fmt: skip
    refused = run_cli(*argv, "--reward-memory-reflection-json", str(bad))
    assert refused.code == 2, refused.stdout
    assert refused.json["field"] == "reflection.turn_summary"
    assert _nothing_written()
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(forged_validation(reflection())))
    retry = run_cli(
        *argv,
        "--reward-memory-reflection-json", str(good),
        "--reward-memory-validation-json", str(forged),
    )  # fmt: skip
    assert retry.code == 0, retry.stdout
    assert retry.json["status"] == "committed"
    assert retry.json["caller_validation_ignored"] is True
    assert retry.json["reward_memory_reflection"]["status"] == "awaiting_evidence_validation"
    assert not MemoryRecord.objects.exists()


def test_a_malformed_caller_validation_is_ignored_not_half_applied(db, agents, routed, host_client):
    todo(agents)
    response = host_client("demo", "author").post(
        SETTLE,
        body(reflection(), reward_memory_validation={"schema_version": "nonsense"}),
        format="json",
    )
    assert response.status_code == 201, response.json()
    assert response.json()["caller_validation_ignored"] is True
    assert ReflectionCandidate.objects.get().validation is None


def test_an_ingest_refused_after_the_settlement_fails_open_not_4xx(
    db, agents, routed, tmp_path, monkeypatch
):
    from reward_memory.services import ingest

    vx.install(tmp_path, "echo-pass", vx.PASSING)
    todo(agents, validator="echo-pass")
    real = ingest.ingest_event

    def refuse_on_execute(**kw):
        if kw.get("execute"):
            raise RewardMemoryError("invalid_argument", "changed underneath", field="x")
        return real(**kw)

    monkeypatch.setattr(ingest, "ingest_event", refuse_on_execute)
    result = _settle(reflection())
    assert result["status"] == "awaiting_evidence_validation"
    assert result["ingest_status"] == "ingest_refused"
    assert Todo.objects.get(todo_id="t1").state == "completed"


def test_preview_runs_no_validator_and_stores_nothing(db, agents, routed, tmp_path, double):
    vx.install(tmp_path, "echo-pass", vx.PASSING)
    todo(agents, validator="echo-pass")
    result = settle_turn(
        goal_id="demo", agent_id="author", todo_id="t1", turn_instance_id="turn-1",
        event_kind="todo_completed", reflection=reflection(),
    )  # fmt: skip
    assert result.payload["reward_memory_reflection"]["status"] == "preview"
    assert result.payload["reward_memory_reflection"]["validator_run_count"] == 0
    assert _nothing_written()


def test_the_admin_lists_reflections_awaiting_me_in_short_columns(
    db, agents, routed, client, admin_user
):
    from django.contrib.auth import get_user_model

    todo(agents)
    _settle(reflection())
    row = ReflectionCandidate.objects.get()
    assert row.status == "awaiting_evidence_validation"
    url = "/admin/reward_memory/reflectioncandidate/"
    client.force_login(admin_user)  # holds record_reflection_validation
    mine = client.get(url, {"state": "mine"})
    assert [r.pk for r in mine.context["cl"].result_list] == [row.pk]
    page = mine.content.decode()
    assert f'title="{row.reflection_digest}"' in page  # the whole digest on hover
    assert f">{row.reflection_digest}<" not in page  # never the 71 characters in a cell
    assert "awaiting validation" in page
    assert [r.pk for r in client.get(url, {"state": "finalized"}).context["cl"].result_list] == []
    viewer = get_user_model().objects.create_user("viewer", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_reflectioncandidate"))
    client.force_login(viewer)  # may read, may not validate: nothing awaits them
    assert [r.pk for r in client.get(url, {"state": "mine"}).context["cl"].result_list] == []
    awaiting = client.get(url, {"state": "awaiting_evidence_validation"})
    assert [r.pk for r in awaiting.context["cl"].result_list] == [row.pk]
