"""``make run``'s demo: Goal ``demo`` / Agent ``author`` gets preferences and reward
guidance in its turn packet, and loading the demo twice changes nothing."""

from tests.helpers import run_cli
from turn_recall import documents, services
from turn_recall.models import TurnRecallReceipt


def test_the_demo_turn_packet_carries_preferences_and_guidance_and_is_idempotent(db):
    first = run_cli("loopx_demo")
    assert first.code == 0, first.stdout
    loaded = first.json["loaded"]["turn_recall"]
    assert (loaded["status"], loaded["guidance"] > 0) == ("applied", True)
    packet = documents.host_packet(
        services.run_once(
            goal_id="demo", agent_id="author", turn_instance_id="demo-turn-recall-1", execute=True
        )
    )
    assert packet["agent_turn_recall"]["status"] == "replayed"
    assert packet["agent_turn_recall"]["provider_call_count"] == 0
    body = packet["task"]["body"]
    assert "Ask the designated reviewer before merging." in body
    assert "Recalled guidance" in body
    again = run_cli("loopx_demo")
    assert again.json["loaded"]["turn_recall"]["status"] == "kept"
    assert again.json["loaded"]["turn_recall"]["turn_recall_id"] == loaded["turn_recall_id"]
    assert TurnRecallReceipt.objects.count() == 1


def test_the_demo_todo_declares_a_validator_that_really_runs_and_a_rerun_keeps_it(db):
    from hooks.models import CompletionValidator, Todo
    from reward_memory.models import ReflectionCandidate

    first = run_cli("loopx_demo")
    assert first.code == 0, first.stdout
    loaded = first.json["loaded"]["turn_recall"]
    assert loaded["reflection"] == {"reflection": "finalized", "validation": "passed"}
    assert loaded["objects"]["settlement demo/author/demo-turn-reflect-1"] == "created"
    validator = CompletionValidator.objects.get(validator_id="loopx-evidence-check")
    assert set(Todo.objects.values_list("validator", flat=True)) == {validator.pk}
    stored = ReflectionCandidate.objects.get().validation
    assert stored["validated_by"]["kind"] == "validator"
    assert "receipt_committed" in stored["checks"]
    validator.active = False  # an operator's change the rerun keeps
    validator.save(update_fields=["active"])
    again = run_cli("loopx_demo")
    assert again.code == 0, again.stdout
    kept = again.json["loaded"]["turn_recall"]
    assert kept["objects"]["settlement demo/author/demo-turn-reflect-1"] == "kept"
    assert (
        again.json["loaded"]["hooks"]["objects"]["completion validator loopx-evidence-check"]
        == "kept"
    )
    assert kept["reflection"] == {"reflection": "finalized", "validation": "passed"}
    assert CompletionValidator.objects.get().active is False
