"""A model-based test: random remember / correct / retire / replay / stale writes /
expiry against a plain in-memory model of rules 1–8; after every step the service's
view must equal the model's and the journal must be gap-free."""

import datetime as dt

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from loopx_site.core import clock
from loopx_site.core import services as core_services
from loopx_site.core.errors import DomainError
from preferences import services
from preferences.models import PreferenceOperation, PreferenceScope, PreferenceSubject

KEYS = st.sampled_from(["review.collaboration", "pr.style", "tests.first"])
STATEMENTS = st.sampled_from(["Ask the reviewer.", "Do not ask.", "Short PRs."])
BASE = dt.datetime(2026, 11, 30, tzinfo=dt.UTC)


class JournalMachine(RuleBasedStateMachine):
    @initialize()
    def reset(self):
        PreferenceSubject.objects.all().delete()
        PreferenceOperation.objects.all().delete()
        PreferenceScope.objects.all().delete()
        self.offset = dt.timedelta()
        clock.now = lambda: BASE + self.offset  # restored by the test's monkeypatch
        self.revision = None
        self.subjects = {}  # key -> dict(state, statement, expires_at)
        self.lineage = {}  # key -> set of source refs used on it
        self.ops = {}  # operation id -> (kind, args) as sent
        self.n = 0

    # -- the model -------------------------------------------------------------------
    def expect(self, kind, args):
        op = args["operation_id"]
        if op in self.ops:
            return "replayed" if self.ops[op] == (kind, args) else "operation_conflict"
        expected = None if args["expected_revision"] == "none" else int(args["expected_revision"])
        if expected != self.revision:
            return "revision_conflict"
        current = self.subjects.get(args["key"])
        if kind == "retire":
            if current is None:
                return "not_found"
            if current["state"] == "retired":
                return "already_retired"
        elif (
            current
            and current["state"] == "retired"
            and args["source_ref"] in self.lineage.get(args["key"], set())
        ):
            return "stale_source"
        if (
            kind == "remember"
            and args.get("expires_at")
            and (clock.parse_iso_z(args["expires_at"]) <= clock.now())
        ):
            return "invalid_argument"
        return "applied"

    def apply(self, kind, args):
        self.revision = (self.revision or 0) + 1
        self.ops[args["operation_id"]] = (kind, args)
        self.lineage.setdefault(args["key"], set()).add(args["source_ref"])
        self.subjects[args["key"]] = {
            "state": "retired" if kind == "retire" else "active",
            "statement": None if kind == "retire" else args["statement"],
            "expires_at": args.get("expires_at"),
        }

    def call(self, kind, args):
        expected = self.expect(kind, args)
        fn = services.remember if kind == "remember" else services.retire
        try:
            outcome = fn(goal_id="demo", agent_id="author", execute=True, **args)["status"]
        except DomainError as exc:
            outcome = exc.code
        assert outcome == expected, (kind, args, outcome, expected)
        if outcome == "applied":
            self.apply(kind, args)

    def expected_revision(self, stale):
        if stale:
            return "none" if self.revision else "99"
        return "none" if self.revision is None else str(self.revision)

    def fresh_op(self):
        self.n += 1
        return f"op-{self.n}"

    # -- rules -------------------------------------------------------------------------
    @rule(
        key=KEYS,
        statement=STATEMENTS,
        stale=st.booleans(),
        reuse_source=st.booleans(),
        ttl=st.sampled_from([None, 30, 90]),
    )
    def remember(self, key, statement, stale, reuse_source, ttl):
        used = sorted(self.lineage.get(key, set()))
        source = used[0] if reuse_source and used else f"src-{self.n + 1}"
        args = {
            "key": key,
            "statement": statement,
            "source_ref": source,
            "source_quote": "owner words",
            "expected_revision": self.expected_revision(stale),
            "operation_id": self.fresh_op(),
            "expires_at": None
            if ttl is None
            else clock.iso((clock.now() + dt.timedelta(minutes=ttl)).replace(microsecond=0)),
        }
        self.call("remember", args)

    @rule(key=KEYS, stale=st.booleans())
    def retire(self, key, stale):
        args = {
            "key": key,
            "source_ref": f"src-r{self.n + 1}",
            "source_quote": "forget it",
            "expected_revision": self.expected_revision(stale),
            "operation_id": self.fresh_op(),
        }
        self.call("retire", args)

    @rule(data=st.data())
    def replay_or_change(self, data):
        if not self.ops:
            return
        op = data.draw(st.sampled_from(sorted(self.ops)))
        kind, args = self.ops[op]
        if data.draw(st.booleans()):
            self.call(kind, dict(args))  # exact replay
        else:
            self.call(kind, {**args, "source_quote": "different words"})  # conflict

    @rule(minutes=st.sampled_from([1, 45, 120]))
    def time_passes(self, minutes):
        self.offset += dt.timedelta(minutes=minutes)

    # -- invariants --------------------------------------------------------------------
    @invariant()
    def view_matches_model(self):
        if not hasattr(self, "subjects"):
            return
        view = services.read(goal_id="demo", agent_id="author")
        assert view["revision"] == (None if self.revision is None else str(self.revision))
        now = clock.now()
        model = {}
        for key, s in self.subjects.items():
            state = s["state"]
            if state == "active" and s["expires_at"] and clock.parse_iso_z(s["expires_at"]) <= now:
                state = "expired"
            # an expired item withholds its statement (LoopX's expired shape)
            statement = None if state == "expired" else s["statement"]
            model[key] = (state, statement, state == "active")
        assert {
            i["key"]: (i["state"], i["statement"], i["state"] == "active") for i in view["items"]
        } == model

    @invariant()
    def journal_is_gap_free(self):
        seqs = list(
            PreferenceOperation.objects.order_by("sequence").values_list("sequence", flat=True)
        )
        assert seqs == list(range(1, len(seqs) + 1))


def test_journal_matches_the_model_of_the_rules(db, monkeypatch):
    core_services.register_goal(goal_id="demo", agent_ids=["author"], state_ref="s")
    monkeypatch.setattr(clock, "now", clock.now)  # restore whatever the machine installs
    run_state_machine_as_test(
        JournalMachine,
        settings=settings(
            max_examples=40,
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")
