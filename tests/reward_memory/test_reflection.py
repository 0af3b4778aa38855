"""Post-settlement reflection: awaiting evidence validation with zero provider calls
until the Turn settled and a matching validation arrives; then finalised with exact
readback. Exposed on ``turn settle`` and the settle API."""

import json

import pytest

from loopx_site.core.canonical import digest_ref
from reward_memory import services
from reward_memory.errors import RewardMemoryError
from reward_memory.models import MemoryRecord, ReflectionCandidate
from reward_memory.services.reflection import parse_reflection
from tests.helpers import run_cli
from tests.hooks.factories import TodoFactory
from tests.reward_memory import factories as f

CONFIG = "experiments/reflection.json"


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


def validation(doc, **kw):
    parsed = parse_reflection(doc)
    out = {
        "schema_version": "reward_memory_reflection_validation_v0",
        "status": "passed",
        "reflection_digest": digest_ref(parsed),
        "evidence_refs": list(doc["evidence_refs"]),
    }
    out.update(kw)
    return out


def _settle(doc, check=None, settled=True):
    return services.settle_reflection(
        goal_id="demo", agent_id="author", turn_instance_id="turn-1",
        reflection=doc, validation=check, settled=settled,
    )  # fmt: skip


def test_without_a_matching_validation_it_waits_with_zero_provider_calls(db, routed, double):
    doc = reflection()
    plain = _settle(doc)  # the validation command exited 0 but returned no document
    assert plain["status"] == "awaiting_evidence_validation"
    assert plain["provider_call_count"] == 0
    wrong = _settle(doc, validation(doc, evidence_refs=["validation:turn-1/tests"]))
    assert wrong["status"] == "awaiting_evidence_validation"
    other_digest = _settle(doc, validation(doc, reflection_digest="sha256:" + "0" * 64))
    assert other_digest["validation_matched"] is False
    assert double.call_count == 0
    assert ReflectionCandidate.objects.get().status == "awaiting_evidence_validation"
    assert not MemoryRecord.objects.exists()


def test_a_matching_validation_before_settlement_still_waits(db, routed, double):
    doc = reflection()
    result = _settle(doc, validation(doc), settled=False)
    assert result["status"] == "awaiting_evidence_validation"
    assert double.call_count == 0


def test_a_matching_validation_after_settlement_finalises_with_exact_readback(db, routed, double):
    doc = reflection()
    _settle(doc)
    done = _settle(doc, validation(doc))
    assert done["status"] == "finalized"
    assert done["ingest_status"] == "activated"
    assert done["provider_call_count"] > 0
    assert MemoryRecord.objects.get().record_ref == done["record_ref"]
    double.reset_calls()
    again = _settle(doc, validation(doc))  # finalised once; a replay makes no calls
    assert (again["status"], double.call_count) == ("finalized", 0)


def test_explicit_automatic_ingest_false_never_finalises(db, agents, double):
    corpus = f.register("prefs", provider_id="double", agents=[("demo", "author")], route=False)
    f.write_config(CONFIG, f.experiment_config([corpus], automation={"automatic_ingest": False}))
    services.configure_goal(goal_id="demo", agent_id="author", config_path=CONFIG, execute=True)
    double.reset_calls()
    doc = reflection()
    result = _settle(doc, validation(doc))
    assert result["status"] == "awaiting_evidence_validation"
    assert double.call_count == 0


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"source_types": ["real", "real"]}, "reflection.source_types"),
        ({"source_types": ["vibes"]}, "reflection.source_types.0"),
        ({"evidence_refs": []}, "reflection.evidence_refs"),
        ({"turn_summary": "I did things"}, "reflection.turn_summary"),
    ],
)
def test_reflection_shape_rules(db, routed, change, field):
    with pytest.raises(RewardMemoryError) as exc:
        _settle(reflection(**change))
    assert exc.value.field == field


def test_turn_settle_command_and_api_expose_the_seam(
    db, agents, routed, double, tmp_path, host_client
):
    TodoFactory(goal=agents[0].goal, todo_id="t1")
    doc = reflection()
    rpath, vpath = tmp_path / "r.json", tmp_path / "v.json"
    rpath.write_text(json.dumps(doc))
    vpath.write_text(json.dumps(validation(doc)))
    argv = ["turn", "settle", "--goal-id", "demo", "--agent-id", "author", "--todo-id", "t1",
            "--turn-instance-id", "turn-1", "--event-kind", "todo_completed",
            "--reward-memory-reflection-json", str(rpath)]  # fmt: skip
    preview = run_cli(*argv)
    assert preview.json["reward_memory_reflection"]["status"] == "preview"
    assert not ReflectionCandidate.objects.exists()
    waiting = run_cli(*argv, "--execute")
    assert waiting.code == 0, waiting.stdout
    assert waiting.json["reward_memory_reflection"]["status"] == "awaiting_evidence_validation"
    assert double.call_count == 0
    api = host_client("demo", "author").post(
        "/api/v1/turns/settle/",
        {"goal_id": "demo", "agent_id": "author", "todo_id": "t1",
         "turn_instance_id": "turn-1", "event_kind": "todo_completed", "execute": True,
         "reward_memory_reflection": doc, "reward_memory_validation": validation(doc)},
        format="json",
    )  # fmt: skip
    assert api.status_code == 200, api.json()
    assert api.json()["reward_memory_reflection"]["status"] == "finalized"
