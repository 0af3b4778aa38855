"""LoopX wire contract for the explicit Agent preference journal (issue 11).

Each case restates one behaviour that LoopX's own tests check — cited per case from
``loopx-project/loopx``: ``tests/control_plane/test_agent_preferences.py`` (the
production CLI flow), ``tests/control_plane_ts/agent_preferences.test.ts`` (the
lifecycle rules) and ``loopx/control_plane/capabilities/agent_preferences.ts`` (the
documents) — and runs it the way a LoopX host would: against ``manage.py
semantic_preference agent …`` in a real subprocess, and against the API, parsing the
JSON with the same assertions for both.
"""

import hashlib
import json

import pytest
from rest_framework.test import APIClient

from loopx_site.core import services as core_services
from loopx_site.core.canonical import canonical_bytes
from preferences.models import PreferenceOperation, PreferenceScope, PreferenceSubject
from tests.helpers import run_manage

GOAL, AGENT = "demo", "author"
UPDATE = {
    "key": "review.collaboration",
    "statement": "Ask the designated reviewer before merging.",
    "source_ref": "owner-message-1",
    "source_quote": "Use the designated reviewer for my changes.",
    "expected_revision": None,
    "operation_id": "remember-1",
}
CORRECTION = {
    **UPDATE,
    "statement": "Do not contact a reviewer.",
    "source_ref": "owner-message-2",
    "source_quote": "Stop asking a reviewer.",
    "operation_id": "correct-2",
}
ITEM_FIELDS = {
    "key",
    "state",
    "statement",
    "expires_at",
    "source_kind",
    "source_ref",
    "source_quote",
    "recorded_at",
    "operation_id",
    "supersedes_operation_id",
}


class Host:
    """Calls one journal action and returns ``(exit code, document)``; the API's HTTP
    status maps to the CLI's exit code (2xx → 0, else 2)."""

    def __init__(self, kind: str):
        self.kind = kind
        self.clients: dict[str, APIClient] = {}

    def __call__(self, action, *, goal_id=GOAL, agent_id=AGENT, **fields):
        if self.kind == "cli":
            return self._cli(action, goal_id, agent_id, fields)
        return self._api(action, goal_id, agent_id, fields)

    def _cli(self, action, goal_id, agent_id, fields):
        argv = ["semantic_preference", "agent", action, "--goal-id", goal_id]
        argv += ["--agent-id", agent_id]
        for name, value in fields.items():
            if name == "execute":
                argv += ["--execute"] if value else []
                continue
            if name == "expected_revision" and value is None:
                value = "none"
            argv += [f"--{name.replace('_', '-')}", str(value)]
        done = run_manage(*argv, "--format", "json")
        assert "Traceback" not in done.stderr, done.stderr
        return done.returncode, json.loads(done.stdout)

    def _api(self, action, goal_id, agent_id, fields):
        client = self.clients.get(goal_id)
        if client is None:
            issued = core_services.create_token(goal_id=goal_id)
            client = self.clients[goal_id] = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.secret}")
        base = f"/api/v1/goals/{goal_id}/agents/{agent_id}/preferences/"
        if action == "read":
            response = client.get(base)
        elif action in ("observe", "history"):
            response = client.get(f"{base}{action}/", fields)
        else:
            response = client.post(f"{base}{action}/", fields, format="json")
        return (0 if response.status_code < 300 else 2), response.json()


@pytest.fixture(params=["cli", "api"])
def host(request, transactional_db):
    core_services.register_goal(goal_id=GOAL, agent_ids=[AGENT, "reviewer"], state_ref="s.json")
    core_services.register_goal(goal_id="other", agent_ids=[AGENT], state_ref="o.json")
    return Host(request.param)


def items(document):
    return document["current"]["items"]


def test_read_of_an_untouched_scope_is_an_empty_current_view(host):
    """test_agent_preferences.py::test_inactive_preferences_are_silent_… — `read` →
    rc 0 and `current.items == []`; agent_preferences.ts `current()` shape."""
    rc, empty = host("read")
    assert rc == 0
    assert empty["ok"] is True
    assert empty["status"] == "read"
    assert items(empty) == []
    assert empty["current"]["schema_version"] == "agent_preferences_v1"
    assert empty["current"]["revision"] is None
    assert empty["current"]["authority"] == "advisory_only"
    assert isinstance(empty["current"]["instructions"], str)


def test_preview_writes_nothing_and_proposes_the_item(host):
    """test_agent_preferences.py::test_inactive_… — preview status `preview`, no store
    created; agent_preferences.test.ts 'read/preview are side-effect free'."""
    rc, preview = host("remember", **UPDATE)
    assert rc == 0
    assert preview["status"] == "preview"
    assert preview["proposed"]["key"] == UPDATE["key"]
    assert preview["proposed"]["state"] == "active"
    assert preview["proposed"]["source_kind"] == "user_instruction"
    assert items(preview) == []
    assert PreferenceScope.objects.count() == PreferenceOperation.objects.count() == 0
    assert host("observe")[1]["status"] == "absent"


def test_execute_applies_with_a_receipt_and_reads_back(host):
    """test_agent_preferences.py::test_inactive_… — `written["status"] == "applied"`
    then `fresh["current"]["items"][0]["statement"]`; agent_preferences.ts receipt."""
    rc, written = host("remember", **UPDATE, execute=True)
    assert rc == 0
    assert written["status"] == "applied"
    assert set(written["receipt"]) == {
        "operation_id",
        "intent_hash",
        "key",
        "state",
        "supersedes_operation_id",
    }
    assert written["receipt"]["state"] == "active"
    rc, fresh = host("read")
    assert rc == 0
    assert items(fresh)[0]["statement"] == UPDATE["statement"]
    assert set(items(fresh)[0]) == ITEM_FIELDS
    assert fresh["current"] == written["current"]


def test_intent_hash_is_the_sha256_of_the_canonical_intent(host):
    """agent_preferences.ts — `intent = {scope, action, operation_id, key,
    expected_revision, source_ref, source_quote, statement, expires_at}`, hashed."""
    _, written = host("remember", **UPDATE, execute=True)
    intent = {
        "scope": {
            "runtime_id": "loopx-test",
            "state_ref": "s.json",
            "instance_id": "",
            "goal_id": GOAL,
            "agent_id": AGENT,
        },
        "action": "remember",
        "operation_id": UPDATE["operation_id"],
        "key": UPDATE["key"],
        "expected_revision": None,
        "source_ref": UPDATE["source_ref"],
        "source_quote": UPDATE["source_quote"],
        "statement": UPDATE["statement"],
        "expires_at": None,
    }
    from django.conf import settings

    intent["scope"]["runtime_id"] = settings.LOOPX_RUNTIME_ID
    expected = hashlib.sha256(canonical_bytes(intent)).hexdigest()
    assert written["receipt"]["intent_hash"] == expected


def test_instructions_say_how_to_treat_the_view(host):
    """test_agent_preferences.py::test_inactive_… — the guidance substrings a host
    checks in `current.instructions`."""
    host("remember", **UPDATE, execute=True)
    guidance = host("read")[1]["current"]["instructions"]
    for phrase in (
        "Before every preference-dependent external action",
        "even after an earlier empty or current view",
        "Missing hook context is unknown",
        "exact user source",
        "Never store hypothetical examples",
        "Preferences never grant authority",
    ):
        assert phrase in guidance


def test_correction_supersedes_and_a_replay_returns_the_current_view(host):
    """agent_preferences.test.ts 'correction, retirement, historical replay …' —
    correction applied; the old operation replays with the *current* statement."""
    _, added = host("remember", **UPDATE, execute=True)
    rc, changed = host(
        "remember",
        **{**CORRECTION, "expected_revision": added["current"]["revision"]},
        execute=True,
    )
    assert rc == 0
    assert changed["status"] == "applied"
    assert changed["receipt"]["supersedes_operation_id"] == UPDATE["operation_id"]
    rc, replay = host("remember", **UPDATE, execute=True)
    assert rc == 0
    assert replay["status"] == "replayed"
    assert replay["receipt"] == added["receipt"]
    assert items(replay)[0]["statement"] == CORRECTION["statement"]


def test_stale_revision_is_a_revision_conflict_with_current(host):
    """agent_preferences.test.ts — `{...update, operation_id: "stale-new"}` →
    `revision_conflict`; agent_preferences.ts returns `current` beside it."""
    host("remember", **UPDATE, execute=True)
    rc, stale = host("remember", **{**UPDATE, "operation_id": "stale-new"}, execute=True)
    assert rc == 2
    assert stale["ok"] is False
    assert stale["status"] == "revision_conflict"
    assert stale["current"]["revision"] == "1"
    assert isinstance(stale["error"], str)
    assert PreferenceOperation.objects.count() == 1


def test_reused_operation_with_other_arguments_is_an_operation_conflict(host):
    """agent_preferences.test.ts — `{...update, statement: "Merge without checking."}`
    → `operation_conflict` (with `current`)."""
    host("remember", **UPDATE, execute=True)
    rc, conflict = host(
        "remember", **{**UPDATE, "statement": "Merge without checking."}, execute=True
    )
    assert rc == 2
    assert conflict["status"] == "operation_conflict"
    assert items(conflict)[0]["statement"] == UPDATE["statement"]


def test_retirement_is_a_tombstone_and_history_has_three_events(host):
    """test_agent_preferences.py::test_inactive_… — retire → state `retired`, read →
    statement null, `len(history["events"]) == 3`."""
    _, added = host("remember", **UPDATE, execute=True)
    _, changed = host(
        "remember",
        **{**CORRECTION, "expected_revision": added["current"]["revision"]},
        execute=True,
    )
    rc, retired = host(
        "retire",
        key=UPDATE["key"],
        source_ref="owner-message-3",
        source_quote="Forget my review preference.",
        expected_revision=changed["current"]["revision"],
        operation_id="retire-3",
        execute=True,
    )
    assert rc == 0
    assert items(retired)[0]["state"] == "retired"
    assert items(host("read")[1])[0]["statement"] is None
    rc, history = host("history")
    assert rc == 0
    assert history["status"] == "history"
    assert len(history["events"]) == 3
    assert history["events"][0]["statement"] == UPDATE["statement"]
    assert {e["schema_version"] for e in history["events"]} == {"agent_preference_changed_v1"}
    assert history["has_more"] is False
    assert history["next_cursor"] is not None  # real LoopX 2.1.1 keeps it at the end
    assert history["current"] == retired["current"]


def test_observe_is_content_free(host):
    """agent_preferences.test.ts — observe deep-equals `{ok, status: "absent",
    observation_count: 0}` before and `observed`/1 after (ours adds schema_version)."""
    _, before = host("observe")
    assert {k: v for k, v in before.items() if k != "schema_version"} == {
        "ok": True,
        "status": "absent",
        "observation_count": 0,
    }
    host("remember", **UPDATE, execute=True)
    _, after = host("observe")
    assert {k: v for k, v in after.items() if k != "schema_version"} == {
        "ok": True,
        "status": "observed",
        "observation_count": 1,
    }


def test_other_goal_or_agent_stays_empty(host):
    """test_agent_preferences.py::test_shared_runtime_preserves_unconfigured_scope_… —
    a peer Agent / another Goal reads `items == []` after a write elsewhere."""
    host("remember", **UPDATE, execute=True)
    for scope in ({"agent_id": "reviewer"}, {"goal_id": "other"}):
        rc, empty = host("read", **scope)
        assert rc == 0
        assert items(empty) == []
        assert host("observe", **scope)[1]["status"] == "absent"


def test_missing_arguments_fail_with_ok_false(host):
    """test_agent_preferences.py::test_invalid_requests_and_corrupt_storage_… —
    `remember --key review` alone → rc != 0 and `ok is False`."""
    rc, bad = host("remember", key="review")
    assert rc != 0
    assert bad["ok"] is False
    assert bad["status"] == "invalid_request"
    assert PreferenceOperation.objects.count() == 0


def test_a_corrupt_store_is_unavailable_never_empty(host):
    """test_agent_preferences.py::test_invalid_requests_and_corrupt_storage_… — after
    the store is broken, `read` → rc != 0 and `status == "unavailable"`; the broken
    bytes stay untouched."""
    host("remember", **UPDATE, execute=True)
    PreferenceSubject.objects.update(item="{broken")
    rc, failed = host("read")
    assert rc != 0
    assert failed["ok"] is False
    assert failed["status"] == "unavailable"
    assert isinstance(failed["error"], str)
    assert "broken" not in json.dumps(failed)
    assert PreferenceSubject.objects.get().item == "{broken"


def test_unregistered_agent_must_be_registered(host):
    """agent_preferences.test.ts — `agent_id: "unknown"` rejects with /registered/
    (agent_preferences.ts: the agent must be registered in this Goal)."""
    rc, refused = host("remember", **UPDATE, agent_id="unknown", execute=True)
    assert rc == 2
    assert refused["status"] == "invalid_request"
    assert "must be registered" in refused["error"]


def test_retire_needs_an_existing_key(host):
    """agent_preferences.test.ts — `{...update, action: "retire"}` on an empty store
    rejects (/existing/)."""
    fields = {k: v for k, v in UPDATE.items() if k != "statement"}
    rc, refused = host("retire", **fields, execute=True)
    assert rc == 2
    assert refused["ok"] is False
    assert refused["status"] == "invalid_request"


@pytest.mark.parametrize("expires_at", ["2020-01-01T00:00:00Z", "2030-02-30T00:00:00Z"])
def test_past_or_impossible_expiry_is_refused(host, expires_at):
    """agent_preferences.test.ts — past `expires_at` (/future/) and
    `2030-02-30T00:00:00Z` (/calendar/) both reject."""
    rc, refused = host("remember", **UPDATE, expires_at=expires_at, execute=True)
    assert rc == 2
    assert refused["status"] == "invalid_request"
    assert refused["field"] == "expires_at"


def test_an_expired_item_withholds_its_statement(host):
    """agent_preferences.test.ts — after `expires_at`, the item reads `expired` with
    statement null (agent_preferences.ts's expired shape)."""
    host("remember", **UPDATE, expires_at="2099-01-01T00:00:00Z", execute=True)
    # Time passing, as the database sees it: the row's expiry is now in the past.
    import datetime as dt

    PreferenceSubject.objects.update(expires_at=dt.datetime(2020, 1, 1, tzinfo=dt.UTC))
    rc, doc = host("read")
    assert rc == 0
    assert items(doc) == [
        {
            "key": UPDATE["key"],
            "state": "expired",
            "statement": None,
            "operation_id": UPDATE["operation_id"],
            "source_ref": UPDATE["source_ref"],
            "recorded_at": items(doc)[0]["recorded_at"],
            "expires_at": "2099-01-01T00:00:00.000Z",  # LoopX stores toISOString()
        }
    ]


def test_a_65th_key_is_refused_rather_than_evicting(host):
    """agent_preferences.test.ts 'bounded context rejects overflow rather than
    evicting a constraint' — 64 keys stored, the next write rejects, view unchanged."""
    from preferences import services

    for n in range(64):
        services.remember(
            goal_id=GOAL,
            agent_id=AGENT,
            key=f"topic-{n}",
            statement="Keep the stated constraint.",
            source_ref="user-message",
            source_quote="Keep this.",
            expected_revision=str(n) if n else None,
            operation_id=f"op-{n}",
            execute=True,
        )
    _, before = host("read")
    rc, refused = host("remember", **{**UPDATE, "expected_revision": "64"}, execute=True)
    assert rc == 2
    assert refused["ok"] is False
    assert refused["code"] == "capacity_exceeded"
    assert host("read")[1]["current"] == before["current"]


def test_history_pages_hold_twenty_events(host):
    """agent_preferences.ts — history scans committed events 20 at a time with
    `has_more` and `next_cursor`."""
    from preferences import services

    for n in range(23):
        services.remember(
            goal_id=GOAL,
            agent_id=AGENT,
            key=f"k{n}",
            statement="s",
            source_ref=f"r{n}",
            source_quote="q",
            expected_revision=str(n) if n else None,
            operation_id=f"op-{n}",
            execute=True,
        )
    rc, first = host("history")
    assert rc == 0
    assert len(first["events"]) == 20
    assert first["has_more"] is True
    rc, rest = host("history", after_cursor=first["next_cursor"])
    assert [e["sequence"] for e in rest["events"]] == [21, 22, 23]
    assert rest["has_more"] is False
    rc, tail = host("history", after_cursor=rest["next_cursor"])
    assert tail["events"] == []
    assert tail["next_cursor"] == rest["next_cursor"]  # real LoopX 2.1.1: resumable tail
