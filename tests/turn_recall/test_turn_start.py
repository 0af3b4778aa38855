"""The quota packet and its turn-start hooks: participation, failures, capsule, reads."""

import copy
import json
import shlex

import pytest
from django.db import OperationalError, ProgrammingError

from preferences import selectors as pref_selectors
from preferences import services as pref_services
from tests.factories import AgentFactory
from tests.hooks.factories import settle
from tests.turn_recall.conftest import packet
from turn_recall import capsule, turn_start
from turn_recall import contracts as c
from turn_recall.turn_start import Contribution


def remember(agent_id="author", key="review.collaboration", revision="none", op="p-1"):
    return pref_services.remember(
        goal_id="demo",
        agent_id=agent_id,
        key=key,
        statement="Ask the designated reviewer before merging.",
        source_ref="owner-message-1",
        source_quote="Use the designated reviewer.",
        expected_revision=revision,
        operation_id=op,
        execute=True,
    )


def test_packet_is_built_from_todo_and_settlement_state(db, todo):
    empty = packet()
    assert empty["schema_version"] == "loopx_quota_decision_v0"
    assert (empty["decision"], empty["selected_todo"]["todo_id"]) == ("run", "t1")
    assert empty["selected_todo"]["target_key"] == "seg-1"
    assert empty["lifecycle_phase"] == "executing"
    settle("t1", "turn-1", "todo_completed")
    after = packet()
    assert after["decision"] == "idle"
    assert after["selected_todo"] is None
    assert after["recent_outcomes"] == ["todo_completed:todo:t1"]
    assert after["quota"]["spent_units"] == 1
    assert after["interaction_state"]["user_gate"] is False


def test_a_scope_that_never_committed_adds_no_hook_output(db, todo):
    AgentFactory(goal=todo.goal, agent_id="reviewer")
    remember(agent_id="reviewer")  # another Agent's journal does not opt this one in
    pref_services.remember(
        goal_id="demo",
        agent_id="author",
        key="k",
        statement="s",
        source_ref="r",
        source_quote="q",
        expected_revision="none",
        operation_id="preview-only",
    )  # a preview does not activate participation
    doc = packet()
    assert "turn_start_hooks" not in doc
    assert "turn_capsule" not in doc


def test_a_committed_scope_delivers_bodies_and_a_runnable_read(db, todo):
    remember()
    hooks = packet()["turn_start_hooks"]
    (result,) = hooks["results"]
    assert result["hook_id"] == "semantic_preference.agent_context"
    assert (result["status"], result["observation_count"]) == ("observed", 1)
    assert result["agent_read_required"] is True
    assert result["error_code"] is None
    (ctx,) = hooks["contexts"]
    assert ctx["current"]["items"][0]["statement"] == "Ask the designated reviewer before merging."
    (read,) = hooks["required_reads"]
    argv = shlex.split(read["command"])
    assert argv == read["argv"]
    assert argv[:2] == ["python", "manage.py"]  # the host's command, no server path
    assert argv[2:5] == ["semantic_preference", "agent", "read"]
    assert "turn_capsule" not in packet()


def test_the_quota_api_names_the_hosts_command_never_this_servers_paths(db, todo, host_client):
    import sys

    from django.conf import settings

    from loopx_site.core.scanner import scan_text

    remember()
    response = host_client("demo", "author").get(
        "/api/v1/goals/demo/agents/author/quota/should-run/"
    )
    assert response.status_code == 200
    text = response.content.decode()
    assert sys.executable not in text
    assert str(settings.BASE_DIR) not in text
    assert "local_path" not in scan_text(text)
    (read,) = response.json()["turn_start_hooks"]["required_reads"]
    assert read["command"] == (
        "python manage.py semantic_preference agent read --goal-id demo --agent-id author "
        "--format json"
    )


def test_a_retired_subject_stays_visible_as_a_marker(db, todo):
    first = remember()
    pref_services.retire(
        goal_id="demo",
        agent_id="author",
        key="review.collaboration",
        source_ref="owner-message-2",
        source_quote="Forget it.",
        expected_revision=first["state"]["revision"],
        operation_id="p-2",
        execute=True,
    )
    hooks = packet()["turn_start_hooks"]
    item = hooks["contexts"][0]["current"]["items"][0]
    assert (item["state"], item["statement"]) == ("retired", None)
    assert hooks["results"][0]["observation_count"] == 1


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (ProgrammingError("permission denied for table preferences_preferencescope"),
         "agent_preferences_permission_denied"),
        (OperationalError("unable to open database file"), "agent_preferences_unreadable"),
    ],
)  # fmt: skip
def test_an_unreadable_and_a_denied_store_give_different_codes(db, todo, monkeypatch, exc, code):
    remember()

    def broken(**kwargs):
        raise exc

    monkeypatch.setattr(pref_selectors, "current_rows", broken)
    doc = packet()
    result = doc["turn_start_hooks"]["results"][0]
    assert (result["status"], result["error_code"]) == ("unavailable", code)
    assert doc["turn_start_hooks"]["contexts"] == []  # never an empty view instead
    (failure,) = doc["turn_start_hooks"]["failures"]
    assert failure["error_code"] == code
    signed = doc["turn_capsule"]
    assert capsule.verify(signed)
    (obs,) = signed["observations"]
    assert obs["error_code"] == code
    assert obs["invalidates_cached_context"] is True
    assert obs["read_command"] == doc["turn_start_hooks"]["required_reads"][0]["command"]
    assert signed["independent_work"] == "keeps_existing_permissions"
    assert obs["held_actions"] == "preference_dependent_actions"


def _failed_packet(db, monkeypatch):
    remember()
    monkeypatch.setattr(
        pref_selectors,
        "current_rows",
        lambda **kwargs: (_ for _ in ()).throw(OperationalError("disk I/O error")),
    )
    return packet()["turn_capsule"]


def _edits(doc):
    """Every single-field edit of a capsule (top level and nested)."""
    for key in doc:
        if key == "signature":
            continue
        edited = copy.deepcopy(doc)
        edited[key] = "tampered" if edited[key] != "tampered" else "x"
        yield edited
    for key in doc["observations"][0]:
        edited = copy.deepcopy(doc)
        value = edited["observations"][0][key]
        edited["observations"][0][key] = not value if isinstance(value, bool) else "tampered"
        yield edited
    edited = copy.deepcopy(doc)
    edited["observations"].append(copy.deepcopy(edited["observations"][0]))
    yield edited
    edited = copy.deepcopy(doc)
    edited["signature"]["value"] = "0" * 64
    yield edited


def test_the_capsule_signature_fails_after_any_edit(db, todo, monkeypatch):
    signed = _failed_packet(db, monkeypatch)
    assert capsule.verify(signed)
    assert capsule.verify(json.loads(json.dumps(signed)))  # a JSON round trip is fine
    edits = list(_edits(signed))
    assert len(edits) > 10
    for edited in edits:
        assert not capsule.verify(edited)
    assert not capsule.verify({k: v for k, v in signed.items() if k != "signature"})


def test_the_capsule_key_is_the_servers(db, todo, monkeypatch, settings):
    signed = _failed_packet(db, monkeypatch)
    settings.SECRET_KEY = "another-server-" * 4
    assert not capsule.verify(signed)


def test_healthy_and_disabled_hooks_add_no_capsule(db, todo):
    remember()
    assert "turn_capsule" not in packet()


def test_a_failing_producer_is_carried_in_the_capsule_without_a_read_command(db, todo, monkeypatch):
    def exploding(goal, agent):
        raise RuntimeError("provider secret")

    exploding.hook_id = "explore.turn_context"
    monkeypatch.setattr(turn_start, "TURN_START_HOOKS", [turn_start.preference_hook, exploding])
    doc = packet()  # the preference scope never committed: only the failure participates
    (obs,) = doc["turn_capsule"]["observations"]
    assert (obs["hook_id"], obs["status"], obs["read_command"]) == (
        "explore.turn_context",
        "failed",
        None,
    )
    assert "provider secret" not in json.dumps(doc)


def test_required_reads_survive_trimming_with_many_hooks_and_quoted_words(db, todo, monkeypatch):
    remember()

    def bulky(n):
        def produce(goal, agent):
            argv = turn_start.command_argv("explore", "read", "--slot", f"it's {n} $HOME")
            return Contribution(
                result={"hook_id": f"bulky.h{n}", "capability_id": "bulky", "status": "observed",
                        "error_code": None},
                context={"hook_id": f"bulky.h{n}", "body": "x" * 6000},
                required_read={"hook_id": f"bulky.h{n}", "argv": argv,
                               "command": turn_start.shell_command(argv)},
            )  # fmt: skip

        return produce

    hooks = [turn_start.preference_hook] + [bulky(n) for n in range(7)]
    monkeypatch.setattr(turn_start, "TURN_START_HOOKS", hooks)
    dispatch = packet()["turn_start_hooks"]
    assert len(dispatch["results"]) == 8
    assert dispatch["trimmed_hook_ids"]  # bodies were dropped to fit …
    assert len(json.dumps(dispatch)) < c.MAX_DISPATCH_BYTES + 8000
    assert len(dispatch["required_reads"]) == 8  # … obligations never were
    for read in dispatch["required_reads"]:
        assert shlex.split(read["command"]) == read["argv"]
        assert read["argv"][:2] == ["python", "manage.py"]
    trimmed = set(dispatch["trimmed_hook_ids"])
    for read in dispatch["required_reads"]:
        assert read["satisfied_by_delivered_context"] is (read["hook_id"] not in trimmed)


def test_an_agent_preferences_v1_projection_is_passed_through_without_source_quotes(
    db, todo, monkeypatch
):
    view = {
        "schema_version": "agent_preferences_v1",
        "revision": "3",
        "authority": "advisory_only",
        "items": [
            {"key": "k", "state": "active", "statement": "Do X.", "source_quote": "say X"},
            {"key": "old", "state": "expired", "statement": None},
        ],
        "instructions": "Replace cached preferences with this view.",
    }
    monkeypatch.setattr(
        pref_services, "turn_start_projection", lambda g, a: {"status": "read", "current": view}
    )
    hooks = packet()["turn_start_hooks"]
    assert hooks["results"][0]["observation_count"] == 2
    items = hooks["contexts"][0]["current"]["items"]
    assert items[0] == {"key": "k", "state": "active", "statement": "Do X."}
    assert "say X" not in json.dumps(hooks)
