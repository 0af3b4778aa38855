"""Revisions are never reused for a Goal/Agent (issue 21 item 2, issue 23): a scope the
Goal moved to continues the revision sequence past every earlier scope, so a revision
read in another scope — or issued by another store — is ``revision_conflict`` with
``current``, never ``applied``."""

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from loopx_site.core import services as core_services
from loopx_site.core.errors import DomainError
from preferences import selectors, services
from preferences.models import PreferenceOperation, PreferenceScope
from tests.helpers import ROOT, run_cli, subprocess_env

WORKER = Path(__file__).with_name("race_worker.py")
SOURCE = {"source_ref": "owner-message-1", "source_quote": "Use the designated reviewer."}


def _remember(key, expected, operation_id, statement="Ask the reviewer first.", **source):
    return services.remember(
        goal_id="demo",
        agent_id="author",
        key=key,
        statement=statement,
        expected_revision=expected,
        operation_id=operation_id,
        execute=True,
        **{**SOURCE, **source},
    )


def _retire(key, expected, operation_id):
    return services.retire(
        goal_id="demo",
        agent_id="author",
        key=key,
        source_ref="owner-message-9",
        source_quote="Forget it.",
        expected_revision=expected,
        operation_id=operation_id,
        execute=True,
    )


def _move(state_ref):
    core_services.register_goal(goal_id="demo", agent_ids=["author"], state_ref=state_ref)


def _revision():
    return services.read(goal_id="demo", agent_id="author")["revision"]


def _old_scope_at_three():
    """The issue's reproduction up to the move: the old scope at revision 3 (two
    subjects), then the Goal's ``state_ref`` moves and ``migrate-scope`` copies them."""
    _move("goals/demo/state.json")
    _remember("review.collaboration", "none", "p1")
    _remember("pr.style", "1", "p2", statement="Short PRs.", source_ref="owner-message-2")
    _remember("pr.style", "2", "p3", statement="Shorter PRs.", source_ref="owner-message-3")
    assert _revision() == "3"
    _move("goals/demo/state-v2.json")
    services.migrate_scope(goal_id="demo", agent_id="author", operation_id="mig", execute=True)


def _agent_revisions():
    return list(
        PreferenceOperation.objects.filter(scope__goal_ref="demo", scope__agent_ref="author")
        .order_by("pk")
        .values_list("resulting_revision", flat=True)
    )


def assert_never_repeats_or_goes_back():
    revisions = _agent_revisions()
    assert revisions == sorted(set(revisions)), revisions


def test_a_stale_writer_holding_the_old_scopes_revision_conflicts_after_the_move(db):
    _old_scope_at_three()
    migrated = _revision()
    assert migrated == "5"  # the two copied subjects continue past the old 3 (not "2")
    _retire("pr.style", migrated, "r1")  # done in the new scope only
    # the old scope's writer never saw that retire; it still holds the old scope's "3"
    # and — on the old code — the new scope had just reached "3" too.
    before = PreferenceOperation.objects.count()
    for stale in ("3", "1", "2", migrated):
        with pytest.raises(DomainError) as exc:
            _remember("pr.style", stale, f"stale-{stale}", statement="Long PRs.")
        assert exc.value.code == "revision_conflict"
        assert exc.value.state["revision"] == str(int(migrated) + 1)
        assert {i["key"]: i["state"] for i in exc.value.state["items"]}["pr.style"] == "retired"
    assert PreferenceOperation.objects.count() == before
    assert_never_repeats_or_goes_back()


def test_the_visible_revision_never_goes_backwards_across_a_move(db):
    _move("goals/demo/state.json")
    _remember("review.collaboration", "none", "p1")
    _remember("pr.style", "1", "p2", source_ref="owner-message-2")
    _remember("pr.style", "2", "p3", statement="Shorter.", source_ref="owner-message-3")
    _remember("pr.style", "3", "p4", statement="Shortest.", source_ref="owner-message-4")
    assert _revision() == "4"
    _move("goals/demo/state-v2.json")
    assert _revision() is None  # a new, empty store until migrate-scope
    preview = services.migrate_scope(goal_id="demo", agent_id="author", operation_id="mig")
    assert preview["receipt"]["resulting_revision"] == "6"
    done = services.migrate_scope(
        goal_id="demo", agent_id="author", operation_id="mig", execute=True
    )
    assert (done["receipt"]["resulting_revision"], _revision()) == ("6", "6")  # not 2 (4 → 2)
    history = selectors.history(goal_id="demo", agent_id="author")
    assert [e["revision"] for e in history["events"]] == ["5", "6"]
    assert_never_repeats_or_goes_back()


def test_a_first_write_in_a_moved_scope_continues_past_the_old_scope(db):
    _move("goals/demo/state.json")
    _remember("review.collaboration", "none", "p1")
    _remember("pr.style", "1", "p2", source_ref="owner-message-2")
    _move("goals/demo/fresh.json")
    applied = _remember("review.collaboration", "none", "fresh-1", statement="Fresh start.")
    assert applied["state"]["revision"] == "3"  # not a second "1"
    with pytest.raises(DomainError) as exc:  # the old scope's current "2" is not current
        _remember("review.collaboration", "2", "stale", statement="Old view.")
    assert exc.value.code == "revision_conflict"
    assert_never_repeats_or_goes_back()


def test_moving_back_to_a_migrated_scope_is_refused_and_the_retired_key_stays_retired(db):
    """Issue 33: ``state-v2`` migrated from ``state.json``, a key retired there; moving the
    Goal back to ``state.json`` read the pre-migration view (the key active again) and
    ``turn run-once`` delivered it. The move is refused, preview and commit alike."""
    _old_scope_at_three()
    _retire("pr.style", _revision(), "r1")
    for execute in (False, True):
        with pytest.raises(DomainError) as exc:
            core_services.register_goal(
                goal_id="demo",
                agent_ids=["author"],
                state_ref="goals/demo/state.json",
                execute=execute,
            )
        assert exc.value.code == "preference_scope_superseded"
        assert exc.value.details["agent_ids"] == ["author"]
    view = services.read(goal_id="demo", agent_id="author")
    assert {i["key"]: i["state"] for i in view["items"]}["pr.style"] == "retired"


def test_a_new_scope_after_the_live_one_keeps_its_retirements(db):
    _old_scope_at_three()
    _retire("pr.style", _revision(), "r1")
    _move("goals/demo/state-v3.json")
    services.migrate_scope(
        goal_id="demo",
        agent_id="author",
        operation_id="mig-3",
        from_state_ref="goals/demo/state-v2.json",
        execute=True,
    )
    view = services.read(goal_id="demo", agent_id="author")
    assert {i["key"]: i["state"] for i in view["items"]}["pr.style"] == "retired"
    assert_never_repeats_or_goes_back()


def test_history_sequences_are_gap_free_in_every_scope_while_revisions_continue(db):
    """Issue 33: after a scope move the journal's sequences jumped (1, 2, 3, 7); the
    spec's sequence counts one scope's entries without gaps."""
    _old_scope_at_three()
    _retire("pr.style", _revision(), "r1")
    _remember("review.collaboration", _revision(), "p9", statement="Again.", source_ref="m-9")
    events = selectors.history(goal_id="demo", agent_id="author")["events"]
    assert [e["sequence"] for e in events] == [1, 2, 3, 4]
    assert [e["revision"] for e in events] == ["4", "5", "6", "7"]
    _move("goals/demo/fresh.json")
    _remember("pr.style", "none", "fresh-1", statement="Fresh.", source_ref="m-10")
    events = selectors.history(goal_id="demo", agent_id="author")["events"]
    assert [(e["sequence"], e["revision"]) for e in events] == [(1, "8")]


@pytest.mark.parametrize(
    "foreign",
    ["file:1:8b7df143d91c716ecfa5fc1730022f6b", "sqlite:3", "0", "007", "12345678901", "r 3"],
)
def test_a_foreign_revision_is_a_revision_conflict_with_current(db, foreign):
    _move("goals/demo/state.json")
    _remember("review.collaboration", "none", "p1")
    with pytest.raises(DomainError) as exc:
        _remember("review.collaboration", foreign, "p2", statement="Changed.")
    assert exc.value.code == "revision_conflict"
    assert exc.value.state["revision"] == "1"
    assert exc.value.details["revision_origin"] == "foreign"
    assert exc.value.details["expected_revision"] is None  # the caller's text is not echoed
    assert PreferenceOperation.objects.count() == 1


def test_a_foreign_revision_through_the_cli_exits_2_with_status_and_current(db):
    _move("goals/demo/state.json")
    _remember("review.collaboration", "none", "p1")
    result = run_cli(
        "semantic_preference", "agent", "retire", "--goal-id", "demo", "--agent-id", "author",
        "--key", "review.collaboration", "--source-ref", "owner-message-2",
        "--source-quote", "Forget it.", "--expected-revision", "file:1:abc",
        "--operation-id", "r1", "--execute",
    )  # fmt: skip
    assert result.code == 2
    assert result.json["status"] == "revision_conflict"
    assert result.json["current"]["revision"] == "1"


def test_a_foreign_revision_through_the_api_is_409_with_current(db, host_client):
    _move("goals/demo/state.json")
    _remember("review.collaboration", "none", "p1")
    response = host_client("demo", "author").post(
        "/api/v1/goals/demo/agents/author/preferences/remember/",
        {
            "key": "review.collaboration",
            "statement": "Changed.",
            **SOURCE,
            "expected_revision": "file:1:abc",
            "operation_id": "p2",
            "execute": True,
        },
        format="json",
    )
    assert response.status_code == 409
    body = response.json()
    assert body["status"] == "revision_conflict"
    assert body["current"]["revision"] == "1"


@pytest.mark.parametrize(
    "bad", ["", " ", " 3", "3 ", "\x00", "3\x07", "r" * 257, 2.5, True, ["1"], {"r": 1}]
)
def test_a_malformed_expected_revision_stays_invalid_argument(db, bad):
    _move("goals/demo/state.json")
    with pytest.raises(DomainError) as exc:
        _remember("review.collaboration", bad, "p1")
    assert exc.value.code == "invalid_argument"
    assert exc.value.field == "expected_revision"


def test_an_instance_id_change_warns_in_the_preview_like_a_state_ref_change(db):
    core_services.register_goal(goal_id="demo", agent_ids=["author"], instance_id="i1")
    preview = run_cli(
        "goal", "register", "--goal-id", "demo", "--agent-id", "author", "--instance-id", "i2"
    )
    assert preview.json["changes"] == {"instance_id": {"from": "i1", "to": "i2"}}
    assert len(preview.json["warnings"]) == 1
    assert "instance_id" in preview.json["warnings"][0]
    assert "migrate-scope" in preview.json["warnings"][0]
    both = run_cli(
        "goal", "register", "--goal-id", "demo", "--agent-id", "author",
        "--instance-id", "i2", "--state-ref", "s2",
    )  # fmt: skip
    assert "state_ref and instance_id" in both.json["warnings"][0]


# -- real processes: two scopes, concurrent writers holding revisions from both ----------------
def _race(tmp_path, specs):
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(go), op, expected, statement],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=subprocess_env(),
            cwd=ROOT,
        )
        for op, expected, statement in specs
    ]
    go.write_text("go")
    outcomes = {}
    for (op, _, _), proc in zip(specs, procs, strict=True):
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        outcome = json.loads(out.strip().splitlines()[-1])
        outcomes[op] = outcome.get("status") or outcome["error"]
    return outcomes


@pytest.mark.slow
def test_writers_holding_revisions_of_both_scopes_race_and_only_the_live_current_commits(
    transactional_db, tmp_path
):
    _old_scope_at_three()
    migrated = _revision()
    _retire("pr.style", migrated, "r1")
    live = _revision()
    old_scope = PreferenceScope.objects.get(state_ref="goals/demo/state.json")
    assert old_scope.revision == 3
    # the old scope's 1-3, the new scope's stale 4-5, an empty-store and a foreign one
    held = ["1", "2", "3", "4", migrated, "none", "file:1:abc"]
    specs = [(f"stale-{n}", rev, f"stale {n}") for n, rev in enumerate(held)]
    specs += [("live", live, "The live writer's correction.")]
    outcomes = _race(tmp_path, specs)
    assert outcomes.pop("live") == "applied"
    assert Counter(outcomes.values()) == {"revision_conflict": len(held)}
    assert _revision() == str(int(live) + 1)
    old_scope.refresh_from_db()
    assert old_scope.revision == 3  # nothing landed in the scope the Goal moved away from
    assert_never_repeats_or_goes_back()


@pytest.mark.slow
def test_writers_racing_a_state_ref_move_never_reuse_a_revision(transactional_db, tmp_path):
    _move("goals/demo/state.json")
    _remember("review.collaboration", "none", "p1")
    _remember("pr.style", "1", "p2", source_ref="owner-message-2")
    go = tmp_path / "go"
    writers = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(go), op, expected, op],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=subprocess_env(),
            cwd=ROOT,
        )
        for op, expected in [("old-a", "2"), ("old-b", "2"), ("new-a", "none"), ("new-b", "none")]
    ]
    move = ["goal", "register", "--goal-id", "demo", "--agent-id", "author"]
    move += ["--state-ref", "goals/demo/state-v2.json", "--execute"]
    mover = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), *move],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=subprocess_env(),
        cwd=ROOT,
    )
    go.write_text("go")
    assert mover.wait(timeout=120) == 0, mover.stderr.read()
    outcomes = []
    for proc in writers:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        outcomes.append(json.loads(out.strip().splitlines()[-1]))
    tally = Counter(o.get("status") or o["error"] for o in outcomes)
    assert set(tally) <= {"applied", "revision_conflict"}
    assert tally["applied"] <= 2  # at most one per scope
    assert_never_repeats_or_goes_back()
    scopes = PreferenceScope.objects.filter(goal_ref="demo", revision__isnull=False)
    revisions = [s.revision for s in scopes]
    assert len(revisions) == len(set(revisions))
