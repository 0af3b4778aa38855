"""Part A acceptance matrix, one behaviour per test (services)."""

import datetime as dt

import pytest
from django.db import IntegrityError

from loopx_site.core import clock
from loopx_site.core import services as core_services
from loopx_site.core.canonical import canonical_bytes
from loopx_site.core.errors import DomainError
from preferences import documents, selectors, services
from preferences.models import PreferenceOperation, PreferenceScope, PreferenceSubject
from tests.helpers import run_cli


def counts():
    return (
        PreferenceScope.objects.count(),
        PreferenceOperation.objects.count(),
        PreferenceSubject.objects.count(),
    )


def test_read_of_never_written_scope_is_not_participating_and_writes_nothing(scope):
    view = services.read(goal_id="demo", agent_id="author")
    assert view["revision"] is None
    assert view["items"] == []
    assert documents.read(view)["current"]["authority"] == "advisory_only"
    assert counts() == (0, 0, 0)


def test_remember_preview_returns_the_would_be_view_and_writes_nothing(remember):
    receipt = remember(execute=False)
    assert receipt["status"] == "preview"
    assert receipt["proposed"]["statement"].startswith("Ask the designated")
    assert receipt["proposed"]["state"] == "active"
    assert receipt["state"]["items"] == []  # current: what is stored now
    assert "receipt" not in receipt
    assert counts() == (0, 0, 0)
    assert services.read(goal_id="demo", agent_id="author")["revision"] is None


def test_remember_execute_with_none_on_empty_store_commits_revision_1(remember):
    receipt = remember()
    assert receipt["status"] == "applied"
    assert set(receipt["receipt"]) == {
        "operation_id",
        "intent_hash",
        "key",
        "state",
        "supersedes_operation_id",
    }
    assert receipt["receipt"]["supersedes_operation_id"] is None
    assert receipt["state"]["revision"] == "1"
    view = services.read(goal_id="demo", agent_id="author")
    assert view["revision"] == "1"
    assert view["items"] == [
        {
            "key": "review.collaboration",
            "state": "active",
            "statement": "Ask the designated reviewer before merging.",
            "expires_at": None,
            "source_kind": "user_instruction",
            "source_ref": "owner-message-1",
            "source_quote": "Use the designated reviewer.",
            "recorded_at": view["items"][0]["recorded_at"],
            "operation_id": "preference-1",
            "supersedes_operation_id": None,
        }
    ]
    assert receipt["state"]["items"] == view["items"]  # read back equals the commit
    assert view["usage"]["subjects"] == 1
    assert view["usage"]["bytes"] == len(canonical_bytes(view["items"][0]))


def test_stale_revision_is_rejected_and_nothing_written(remember):
    remember()
    before = counts()
    with pytest.raises(DomainError) as exc:
        remember(statement="Other", expected="none", operation_id="preference-2")
    assert exc.value.code == "revision_conflict"
    assert exc.value.http_status == 409
    assert exc.value.details["current_revision"] == "1"
    assert exc.value.state["revision"] == "1"
    assert counts() == before


def test_same_operation_id_and_arguments_replays_the_original_receipt_without_writing(
    remember, retire
):
    original = remember()
    retire(expected="1")  # the view moves on after the original commit
    before = counts()
    again = remember()
    assert again["status"] == "replayed"
    assert again["receipt"] == original["receipt"]
    assert again["state"]["revision"] == "2"  # the current view, not the old projection
    assert again["state"]["items"][0]["state"] == "retired"
    assert counts() == before


def test_same_operation_id_with_a_changed_statement_is_operation_conflict(remember):
    remember()
    with pytest.raises(DomainError) as exc:
        remember(statement="Never ask a reviewer.")
    assert exc.value.code == "operation_conflict"
    assert exc.value.http_status == 409


def test_same_operation_id_with_a_changed_expected_revision_is_operation_conflict(remember):
    remember()
    with pytest.raises(DomainError) as exc:
        remember(expected="1")
    assert exc.value.code == "operation_conflict"


def test_correction_reusing_the_key_supersedes_in_view_and_keeps_history(remember):
    remember()
    receipt = remember(
        statement="Do not ask a reviewer.",
        expected="1",
        operation_id="preference-2",
        source_ref="owner-message-2",
    )
    assert receipt["state"]["revision"] == "2"
    assert receipt["receipt"]["supersedes_operation_id"] == "preference-1"
    view = services.read(goal_id="demo", agent_id="author")
    assert [i["statement"] for i in view["items"]] == ["Do not ask a reviewer."]
    events = documents.history(services.history(goal_id="demo", agent_id="author"))["events"]
    assert [e["statement"] for e in events] == [
        "Ask the designated reviewer before merging.",
        "Do not ask a reviewer.",
    ]
    assert events[1]["supersedes_operation_id"] == "preference-1"
    assert {e["schema_version"] for e in events} == {"agent_preference_changed_v1"}


def test_retire_leaves_a_non_actionable_tombstone_and_history_keeps_the_statement(remember, retire):
    remember()
    receipt = retire()
    assert receipt["status"] == "applied"
    assert receipt["receipt"]["state"] == "retired"
    item = services.read(goal_id="demo", agent_id="author")["items"][0]
    assert item["state"] == "retired"
    assert item["statement"] is None
    assert item["expires_at"] is None
    events = selectors.history(goal_id="demo", agent_id="author")["events"]
    assert events[0]["statement"] == "Ask the designated reviewer before merging."
    assert events[1]["kind"] == "retire"
    assert events[1]["state"] == "retired"
    assert events[1]["statement"] is None


def test_retire_unknown_key_is_not_found(remember, retire):
    remember()
    with pytest.raises(DomainError) as exc:
        retire(key="unknown.key")
    assert exc.value.code == "not_found"


def test_retire_already_retired_key_is_already_retired(remember, retire):
    remember()
    retire()
    with pytest.raises(DomainError) as exc:
        retire(expected="2", operation_id="retire-2")
    assert exc.value.code == "already_retired"
    assert exc.value.http_status == 409


def test_remembering_a_retired_key_with_an_old_source_ref_is_stale_source(remember, retire):
    remember()
    retire()
    for used in ("owner-message-1", "owner-message-2"):
        with pytest.raises(DomainError) as exc:
            remember(expected="2", operation_id=f"again-{used}", source_ref=used)
        assert exc.value.code == "stale_source"
    fresh = remember(
        expected="2",
        operation_id="again-fresh",
        source_ref="owner-message-3",
        statement="Ask the reviewer again.",
    )
    assert fresh["status"] == "applied"
    assert fresh["state"]["items"][0]["statement"] == "Ask the reviewer again."


def test_65th_key_is_capacity_exceeded_and_nothing_is_evicted(remember):
    for n in range(64):
        remember(
            key=f"k{n:02d}",
            statement="s",
            expected="none" if n == 0 else str(n),
            operation_id=f"op-{n}",
        )
    before = counts()
    with pytest.raises(DomainError) as exc:
        remember(key="k64", statement="s", expected="64", operation_id="op-64")
    assert exc.value.code == "capacity_exceeded"
    assert exc.value.http_status == 413
    assert counts() == before
    assert len(services.read(goal_id="demo", agent_id="author")["items"]) == 64


def test_more_than_32_kib_is_capacity_exceeded(remember):
    big = "x" * 1200
    committed = 0

    def fill():
        nonlocal committed
        for n in range(40):
            remember(
                key=f"k{n:02d}",
                statement=big,
                expected=str(n) if n else "none",
                operation_id=f"op-{n}",
                source_quote="q" * 10,
            )
            committed += 1

    with pytest.raises(DomainError) as exc:
        fill()
    assert exc.value.code == "capacity_exceeded"
    view = services.read(goal_id="demo", agent_id="author")
    assert view["usage"]["bytes"] <= 32768
    assert len(view["items"]) == committed
    assert view["usage"]["bytes"] == sum(len(canonical_bytes(i)) for i in view["items"])
    assert exc.value.details["bytes"] > 32768


def test_expired_subject_reads_expired_and_not_actionable(remember, monkeypatch):
    now = clock.now()
    remember(expires_at=(now + dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ"))
    assert services.read(goal_id="demo", agent_id="author")["items"][0]["state"] == "active"
    monkeypatch.setattr(clock, "now", lambda: now + dt.timedelta(hours=2))
    item = services.read(goal_id="demo", agent_id="author")["items"][0]
    assert item == {
        "key": "review.collaboration",
        "state": "expired",
        "statement": None,
        "operation_id": "preference-1",
        "source_ref": "owner-message-1",
        "recorded_at": item["recorded_at"],
        "expires_at": item["expires_at"],
    }


@pytest.mark.parametrize(
    "expires_at",
    ["2020-01-01T00:00:00Z", "2026-02-30T00:00:00Z", "2030-01-01T00:00:00+01:00", "soon"],
)
def test_expires_at_must_be_a_real_future_utc_instant(remember, expires_at):
    with pytest.raises(DomainError) as exc:
        remember(expires_at=expires_at)
    assert exc.value.code == "invalid_argument"
    assert exc.value.field == "expires_at"
    assert counts() == (0, 0, 0)


@pytest.mark.parametrize("field", ["statement", "source_ref", "source_quote"])
def test_text_that_is_not_utf8_is_invalid_argument_and_nothing_written(remember, field):
    # A lone surrogate is what Python makes of undecodable bytes in argv.
    with pytest.raises(DomainError) as exc:
        remember(**{field: "Ask the reviewer \udcff first."})
    assert (exc.value.code, exc.value.field) == ("invalid_argument", field)
    assert counts() == (0, 0, 0)


def test_cli_given_undecodable_bytes_answers_exit_2_with_an_envelope(scope):
    result = run_cli(
        "semantic_preference", "agent", "remember", "--goal-id", "demo",
        "--agent-id", "author", "--key", "review.collaboration",
        "--statement", "Ask the reviewer \udcff first.", "--source-ref", "owner-message",
        "--source-quote", "As the owner said.", "--expected-revision", "none",
        "--operation-id", "preference-1", "--execute",
    )  # fmt: skip
    assert result.code == 2, result.stdout
    assert (result.json["status"], result.json["field"]) == ("invalid_request", "statement")
    assert counts() == (0, 0, 0)


def test_other_goal_or_agent_with_same_names_is_isolated(remember):
    core_services.register_goal(goal_id="other", agent_ids=["author"])
    remember()
    assert services.read(goal_id="demo", agent_id="reviewer")["revision"] is None
    assert services.read(goal_id="other", agent_id="author")["revision"] is None
    # the same operation id in another scope is a new operation, not a replay
    receipt = remember(goal_id="other")
    assert receipt["status"] == "applied"


def test_history_pages_have_stable_cursors_without_duplicates_or_gaps(remember):
    for n in range(7):
        remember(
            key=f"k{n}", statement=f"s{n}", expected=str(n) if n else "none", operation_id=f"op-{n}"
        )
    seen, cursor = [], None
    while True:
        page = selectors.history(goal_id="demo", agent_id="author", after_cursor=cursor, limit=3)
        seen += [e["sequence"] for e in page["events"]]
        assert page["next_cursor"] is not None  # LoopX keeps the cursor, also at the end
        cursor = page["next_cursor"]
        if not page["has_more"]:
            # a page from the end is empty and answers the same cursor (a tail resumes)
            tail = selectors.history(goal_id="demo", agent_id="author", after_cursor=cursor)
            assert tail["events"] == []
            assert tail["next_cursor"] == cursor
            break
        # a cursor is stable: the same page again
        again = selectors.history(goal_id="demo", agent_id="author", after_cursor=cursor, limit=3)
        assert again == selectors.history(
            goal_id="demo", agent_id="author", after_cursor=cursor, limit=3
        )
    assert seen == list(range(1, 8))


@pytest.mark.parametrize("cursor", ["garbage", "", "MTIz", "!!"])
def test_foreign_or_malformed_cursor_is_unavailable_like_loopx(remember, cursor):
    remember()
    with pytest.raises(DomainError) as exc:
        selectors.history(goal_id="demo", agent_id="author", after_cursor=cursor or "x")
    assert exc.value.field == "after_cursor"
    assert exc.value.wire_status == "unavailable"  # LoopX: preference_history_unreadable


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"key": "Review"}, "key"),
        ({"key": "k" * 129}, "key"),
        ({"key": "_x"}, "key"),
        ({"statement": ""}, "statement"),
        ({"statement": "x" * 1201}, "statement"),
        ({"statement": "a\x00b"}, "statement"),
        ({"source_ref": "r" * 1025}, "source_ref"),
        ({"source_quote": "q" * 1601}, "source_quote"),
        ({"operation_id": "op\nx"}, "operation_id"),
        ({"operation_id": "   "}, "operation_id"),
        ({"operation_id": "o" * 129}, "operation_id"),
        ({"expected": ""}, "expected_revision"),
        ({"expected": "3\n"}, "expected_revision"),
        ({"expected": "r" * 257}, "expected_revision"),
        ({"expected": 2.5}, "expected_revision"),
        ({"expected": ["3"]}, "expected_revision"),
        ({"expected": True}, "expected_revision"),
    ],
)
def test_invalid_arguments_are_rejected_with_the_field_and_nothing_written(
    remember, overrides, field
):
    with pytest.raises(DomainError) as exc:
        remember(**overrides)
    assert exc.value.code == "invalid_argument"
    assert exc.value.field == field
    assert counts() == (0, 0, 0)


def test_unknown_goal_and_agent_are_not_registered(remember):
    with pytest.raises(DomainError) as exc:
        remember(goal_id="ghost")
    assert exc.value.code == "goal_not_registered"
    with pytest.raises(DomainError) as exc:
        remember(agent_id="ghost")
    assert exc.value.code == "agent_not_registered"
    assert exc.value.http_status == 404


def test_changed_state_ref_reads_empty_until_explicit_migration(remember, retire):
    remember()
    remember(key="pr.style", statement="Short PRs.", expected="1", operation_id="p2")
    retire(key="pr.style", expected="2", operation_id="r1")
    core_services.register_goal(
        goal_id="demo", agent_ids=["author"], state_ref="goals/demo/moved.json"
    )
    assert services.read(goal_id="demo", agent_id="author")["revision"] is None

    preview = services.migrate_scope(goal_id="demo", agent_id="author", operation_id="mig-1")
    assert preview["status"] == "preview"
    assert services.read(goal_id="demo", agent_id="author")["revision"] is None

    done = services.migrate_scope(
        goal_id="demo", agent_id="author", operation_id="mig-1", execute=True
    )
    assert done["status"] == "applied"
    assert done["receipt"]["copied_keys"] == ["pr.style", "review.collaboration"]
    view = services.read(goal_id="demo", agent_id="author")
    assert view["revision"] == "5"  # continues past the old scope's 3, never repeats it
    assert {i["key"]: i["state"] for i in view["items"]} == {
        "pr.style": "retired",
        "review.collaboration": "active",
    }
    events = selectors.history(goal_id="demo", agent_id="author")["events"]
    assert {e["kind"] for e in events} == {"migrate"}
    assert {e["supersedes_operation_id"] for e in events} == {"preference-1", "r1"}
    # lineage survives the move: the retired key's old source is still stale
    with pytest.raises(DomainError) as exc:
        remember(key="pr.style", statement="x", expected="5", operation_id="p9")
    assert exc.value.code == "stale_source"
    again = services.migrate_scope(
        goal_id="demo", agent_id="author", operation_id="mig-1", execute=True
    )
    assert again["status"] == "replayed"


def test_migration_into_a_participating_scope_is_refused(remember):
    remember()
    core_services.register_goal(goal_id="demo", agent_ids=["author"], state_ref="moved")
    remember(operation_id="fresh")
    with pytest.raises(DomainError) as exc:
        services.migrate_scope(goal_id="demo", agent_id="author", operation_id="m", execute=True)
    assert exc.value.code == "scope_not_empty"


def test_turn_start_projection_is_absent_for_a_scope_that_never_committed(scope):
    from loopx_site.core.models import Agent

    agent = Agent.objects.select_related("goal").get(goal__goal_id="demo", agent_id="author")
    assert services.turn_start_projection(agent.goal, agent) is None


def test_turn_start_projection_carries_bodies_markers_instructions_and_reads(remember, retire):
    from loopx_site.core.models import Agent

    remember()
    remember(key="pr.style", statement="Short PRs.", expected="1", operation_id="p2")
    retire(key="pr.style", expected="2", operation_id="r1")
    agent = Agent.objects.select_related("goal").get(goal__goal_id="demo", agent_id="author")
    projection = services.turn_start_projection(agent.goal, agent)
    assert projection["status"] == "current"
    assert projection["observation_count"] == 2
    assert projection["current"] == [
        {
            "key": "review.collaboration",
            "statement": "Ask the designated reviewer before merging.",
            "revision": "1",
        }
    ]
    assert projection["markers"] == [{"key": "pr.style", "state": "retired", "revision": "3"}]
    assert projection["instructions"]
    assert projection["required_reads"] == [
        "manage.py semantic_preference agent read --goal-id demo --agent-id author --format json"
    ]


def test_turn_start_projection_of_an_unreadable_store_is_unavailable(remember, monkeypatch):
    from django.db import OperationalError

    from loopx_site.core.models import Agent

    remember()
    agent = Agent.objects.select_related("goal").get(goal__goal_id="demo", agent_id="author")

    def broken(scope_ref):
        raise OperationalError("disk I/O error")

    monkeypatch.setattr(selectors, "current_rows", lambda **kw: broken(None))
    rendered = documents.journal.turn_start(services.turn_start_projection(agent.goal, agent))
    assert rendered == {
        "schema_version": "semantic_preference_turn_start_v0",
        "status": "unavailable",
        "error_code": "agent_preferences_unreadable",
    }


def test_turn_start_projection_tells_a_denied_read_from_an_unreadable_store(remember, monkeypatch):
    from django.db import ProgrammingError

    from loopx_site.core.models import Agent

    remember()
    agent = Agent.objects.select_related("goal").get(goal__goal_id="demo", agent_id="author")

    def denied(**kwargs):
        raise ProgrammingError("permission denied for table preferences_preferencesubject")

    monkeypatch.setattr(selectors, "current_rows", denied)
    projection = services.turn_start_projection(agent.goal, agent)
    assert projection["error_code"] == "agent_preferences_permission_denied"


def test_read_uses_at_most_two_queries(remember, django_assert_max_num_queries):
    for n in range(5):
        remember(
            key=f"k{n}", statement="s", expected=str(n) if n else "none", operation_id=f"op-{n}"
        )
    with django_assert_max_num_queries(2):
        view = services.read(goal_id="demo", agent_id="author")
    assert len(view["items"]) == 5
    with django_assert_max_num_queries(2):
        services.read(goal_id="demo", agent_id="reviewer")  # never written: 2 queries


def test_remember_uses_at_most_six_queries(remember, django_assert_max_num_queries):
    """Savepoint, scope resolve+lock+rows, journal insert, subject write, scope advance,
    release: the transaction markers count too."""
    remember()
    with django_assert_max_num_queries(6):
        remember(key="k2", statement="s", expected="1", operation_id="op-2")
    with django_assert_max_num_queries(6):
        remember(key="k2", statement="t", expected="2", operation_id="op-3")
    with django_assert_max_num_queries(3):
        assert (
            remember(key="k2", statement="t", expected="2", operation_id="op-3")["status"]
            == "replayed"
        )


@pytest.mark.parametrize(
    "make",
    [
        lambda s, op: PreferenceOperation.objects.create(
            scope=s,
            sequence=1,
            operation_id="preference-1",
            kind="remember",
            key="k2",
            statement="x",
            source_ref="r",
            source_quote="q",
            resulting_revision=1,
            intent_hash="d",
            receipt={},
            created_at=clock.now(),
        ),
        lambda s, op: PreferenceOperation.objects.create(
            scope=s,
            sequence=1,
            operation_id="other",
            kind="remember",
            key="k2",
            statement="x",
            source_ref="r",
            source_quote="q",
            resulting_revision=1,
            intent_hash="d",
            receipt={},
            created_at=clock.now(),
        ),
        lambda s, op: PreferenceOperation.objects.create(
            scope=s,
            sequence=2,
            operation_id="other",
            kind="retire",
            key="k2",
            statement="x",
            source_ref="r",
            source_quote="q",
            resulting_revision=2,
            intent_hash="d",
            receipt={},
            created_at=clock.now(),
        ),
        lambda s, op: PreferenceOperation.objects.create(
            scope=s,
            sequence=1,
            operation_id="other",
            kind="remember",
            key="k2",
            statement="x",
            source_ref="r",
            source_quote="q",
            resulting_revision=9,
            intent_hash="d",
            receipt={},
            created_at=clock.now(),
        ),
        lambda s, op: PreferenceSubject.objects.create(
            scope=s,
            key="review.collaboration",
            state="active",
            statement="x",
            source_ref="r",
            revision=1,
            operation=op,
            updated_at=clock.now(),
            item="{}",
            size=2,
        ),
        lambda s, op: PreferenceSubject.objects.create(
            scope=s,
            key="other",
            state="retired",
            statement="x",
            source_ref="r",
            revision=1,
            operation=op,
            updated_at=clock.now(),
            item="{}",
            size=2,
        ),
    ],
    ids=[
        "operation_uniq",
        "revision_uniq",
        "retire_statement_check",
        "sequence_uniq",
        "subject_key_uniq",
        "subject_state_check",
    ],
)
def test_journal_constraints_hold_in_the_database(remember, make):
    remember()
    scope = PreferenceScope.objects.get()
    op = PreferenceOperation.objects.get()
    with pytest.raises(IntegrityError):
        make(scope, op)


# -- a preview runs every check the commit runs (issue 10 item 6) -----------------------
def test_preview_of_a_reused_operation_id_with_other_arguments_is_operation_conflict(remember):
    remember()
    before = counts()
    with pytest.raises(DomainError) as exc:
        remember(statement="Merge without review.", execute=False)
    assert exc.value.code == "operation_conflict"
    assert exc.value.state["revision"] == "1"
    assert counts() == before


def test_preview_of_a_committed_operation_previews_as_its_replay(remember):
    original = remember()
    preview = remember(execute=False)
    assert preview["status"] == "replayed"
    assert preview["receipt"] == original["receipt"]


@pytest.mark.parametrize(
    ("setup", "call", "code"),
    [
        (lambda r, t: r(), lambda r, t: r(operation_id="p2", expected="none"), "revision_conflict"),
        (lambda r, t: r(), lambda r, t: t(key="nope", expected="1"), "not_found"),
        (
            lambda r, t: (r(), t()),
            lambda r, t: r(operation_id="p3", expected="2"),
            "stale_source",
        ),
        (
            lambda r, t: r(expires_at=None),
            lambda r, t: r(operation_id="p4", expected="1", expires_at="2020-01-01T00:00:00Z"),
            "invalid_argument",
        ),
    ],
    ids=["revision", "retire_target", "stale_source", "expiry"],
)
def test_preview_refuses_what_the_commit_would_refuse(remember, retire, setup, call, code):
    setup(remember, retire)
    before = counts()

    def preview_remember(**kw):
        return remember(**{**kw, "execute": False})

    def preview_retire(**kw):
        return retire(**{**kw, "execute": False})

    with pytest.raises(DomainError) as exc:
        call(preview_remember, preview_retire)
    assert exc.value.code == code
    assert counts() == before


def test_preview_refuses_a_65th_key(remember):
    for n in range(64):
        remember(
            key=f"k{n:02d}", statement="s", expected=str(n) if n else "none", operation_id=f"o{n}"
        )
    with pytest.raises(DomainError) as exc:
        remember(key="k64", statement="s", expected="64", operation_id="o64", execute=False)
    assert exc.value.code == "capacity_exceeded"
