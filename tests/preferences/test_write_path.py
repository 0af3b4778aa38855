"""The journal's write path remembers each scope's decoded current view (hit only when
the snapshot read inside the write's own transaction returns byte-identical text) and,
on SQLite outside atomic blocks, runs its commit in the DB-API connection's own
transaction. Neither may change a byte: writers in two processes — and in two threads
— alternating on one scope emit exactly the documents of an uncached run through
Django's ``transaction.atomic``, and the remembered view is hit when this writer's view
is the scope's latest and missed when another process committed since."""

import datetime as dt
import json
import queue
import random
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from loopx_site.core import clock, encoding
from loopx_site.core import services as core_services
from loopx_site.core.errors import DomainError
from preferences import documents, journal_store, journal_views, selectors, services
from preferences.models import PreferenceOperation, PreferenceScope, PreferenceSubject
from tests.helpers import ROOT, subprocess_env

WORKER = Path(__file__).with_name("view_worker.py")
BASE = dt.datetime(2026, 12, 1, 9, 0, 0, 123456, tzinfo=dt.UTC)
# Keys whose writes land before, between and after the existing ones.
KEYS = ["m.middle", "a.first", "z.last", "c.third", "m.middle-2", "b", "y.late"]
# Who writes each step: alternating, with runs of one writer in between.
WRITERS = [int(c) for c in "0101000110101110010110001101011100100101"]


class CountingDecode:
    """``selectors.decode_items``, counting its calls (one per full decode of a view)."""

    def __init__(self, decode):
        self.decode, self.calls = decode, 0

    def __call__(self, texts):
        self.calls += 1
        return self.decode(texts)

    @classmethod
    def install(cls) -> "CountingDecode":
        counter = cls(selectors.decode_items)
        selectors.decode_items = counter
        return counter


def run_step(step: dict) -> str:
    """One write at ``step["now"]``, rendered as the CLI encodes its document."""
    fn = services.remember if step["kind"] == "remember" else services.retire
    at = dt.datetime.fromisoformat(step["now"])
    saved, clock.now = clock.now, lambda: at
    try:
        document = documents.respond(
            documents.write, fn, goal_id="demo", agent_id="author", execute=True, **step["args"]
        )
    except DomainError as err:
        document = err.envelope()
    finally:
        clock.now = saved
    return encoding.dumps(document)


def drive(send) -> tuple[list[tuple[int, dict]], list[str]]:
    """Run the scenario, each step by ``send(writer, step) -> document``; returns the
    steps as sent and the documents."""
    rng = random.Random(25)
    revision, sent, docs, done = "none", [], [], []
    for n, writer in enumerate(WRITERS):
        now = BASE + dt.timedelta(minutes=n)
        roll = rng.random()
        if done and roll > 0.85:  # an earlier operation again: exact, or changed
            kind, args = rng.choice(done)
            args = dict(args) if roll > 0.92 else {**args, "source_quote": "other words"}
        elif roll > 0.7:
            kind, args = "retire", {"source_ref": f"owner-{n}", "source_quote": "Forget it."}
        else:
            expires = rng.choice([None, None, None, 2, 30])
            kind, args = (
                "remember",
                {
                    "statement": f"Statement {n} for the owner.",
                    "source_ref": f"owner-{n}",
                    "source_quote": f"Owner words {n}.",
                    "expires_at": None
                    if expires is None
                    else clock.iso(now + dt.timedelta(minutes=expires)),
                },
            )
        if "operation_id" not in args:
            stale = rng.random() < 0.12
            args["key"] = rng.choice(KEYS)
            args["operation_id"] = f"op-{n}"
            args["expected_revision"] = (
                ("none" if revision != "none" else "7") if stale else revision
            )
            done.append((kind, args))
        step = {"kind": kind, "now": now.isoformat(), "args": args}
        doc = send(writer, step)
        current = json.loads(doc).get("current")
        if current is not None:
            revision = current["revision"] or "none"
        sent.append((writer, step))
        docs.append(doc)
    return sent, docs


def uncached_documents(sent) -> list[str]:
    """The same steps from an empty journal, every view decoded afresh and every commit
    in Django's ``transaction.atomic`` on Django's cursor (queries being captured)."""
    PreferenceSubject.objects.all().delete()
    PreferenceOperation.objects.all().delete()
    PreferenceScope.objects.all().delete()
    docs = []
    for _, step in sent:
        journal_views._VIEWS.clear()
        with CaptureQueriesContext(connection):
            docs.append(run_step(step))
    return docs


@pytest.fixture
def demo_journal(transactional_db):
    core_services.register_goal(goal_id="demo", agent_ids=["author"], state_ref="s")
    journal_views._VIEWS.clear()
    yield
    journal_views._VIEWS.clear()


def statuses(docs):
    parsed = [json.loads(d) for d in docs]
    return {d.get("code") or d["status"] for d in parsed}


# exclusive: it counts each worker process's cache hits exactly; once, in a full parallel
# PostgreSQL leg, one step decoded again where a hit was due (not reproduced alone)
@pytest.mark.slow
@pytest.mark.exclusive
def test_two_processes_alternating_on_one_scope_write_the_uncached_documents(demo_journal):
    workers = [
        subprocess.Popen(
            [sys.executable, str(WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=subprocess_env(),
            cwd=ROOT,
        )
        for _ in range(2)
    ]
    decodes = []  # (writer, full decodes during this step)
    seen = [0, 0]

    def send(writer, step):
        proc = workers[writer]
        proc.stdin.write(json.dumps(step) + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        reply = json.loads(line)
        decodes.append((writer, reply["decodes"] - seen[writer]))
        seen[writer] = reply["decodes"]
        return reply["document"]

    try:
        sent, docs = drive(send)
    finally:
        for proc in workers:
            proc.communicate("\n", timeout=60)
    assert [p.returncode for p in workers] == [0, 0]

    assert docs == uncached_documents(sent)
    assert {"applied", "replayed", "revision_conflict", "operation_conflict"} <= statuses(docs)
    # Hit exactly when no other process committed since this writer's last step (its view
    # is the scope's latest); missed — decoded again — when one did.
    applied = [json.loads(d).get("status") == "applied" for d in docs]
    hits = misses = 0
    for n, (writer, count) in enumerate(decodes):
        earlier = [m for m in range(n) if decodes[m][0] == writer]
        if not earlier or not any(applied[: earlier[-1] + 1]):
            continue  # this writer has no view of a non-empty scope yet
        foreign = any(applied[m] for m in range(earlier[-1] + 1, n))
        if foreign:
            assert count >= 1, n
            misses += 1
        else:
            assert count == 0, n
            hits += 1
    assert hits >= 5, (hits, misses)
    assert misses >= 5, (hits, misses)


@pytest.mark.exclusive  # counts cache hits exactly, as the two-process test above
def test_two_threads_alternating_on_one_scope_write_the_uncached_documents(demo_journal):
    counter = CountingDecode(selectors.decode_items)
    inboxes, outbox = [queue.Queue(), queue.Queue()], queue.Queue()

    def serve(inbox):
        try:
            while (step := inbox.get()) is not None:
                try:
                    outbox.put(run_step(step))
                except BaseException as exc:  # the test thread reports it
                    outbox.put(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=serve, args=(box,)) for box in inboxes]
    for t in threads:
        t.start()

    def send(writer, step):
        inboxes[writer].put(step)
        reply = outbox.get(timeout=60)
        if isinstance(reply, BaseException):
            raise reply
        return reply

    saved = selectors.decode_items
    selectors.decode_items = counter
    try:
        sent, docs = drive(send)
    finally:
        selectors.decode_items = saved
        for box in inboxes:
            box.put(None)
        for t in threads:
            t.join(60)
    assert docs == uncached_documents(sent)
    # One process shares its remembered views across its threads: after the first
    # write, every snapshot of the scope hits.
    assert counter.calls <= 1, counter.calls


def test_a_stale_remembered_view_is_a_miss_never_a_wrong_view(demo_journal):
    step = {"kind": "remember", "now": BASE.isoformat()}

    def remember(n, key, expected):
        args = {
            "key": key,
            "statement": f"Statement {n}.",
            "source_ref": f"owner-{n}",
            "source_quote": "Owner words.",
            "expected_revision": expected,
            "operation_id": f"op-{n}",
        }
        return json.loads(run_step({**step, "args": args}))

    remember(1, "a", "none")
    remember(2, "b", "1")
    scope_id = PreferenceScope.objects.get().pk
    remembered = journal_views._VIEWS[scope_id]
    # Another writer moved the scope on (here: its subject rewritten behind our back) …
    subject = PreferenceSubject.objects.get(key="a")
    item = json.loads(subject.item)
    item["statement"] = "Rewritten elsewhere."
    PreferenceSubject.objects.filter(pk=subject.pk).update(
        item=json.dumps(item, sort_keys=True, separators=(",", ":"))
    )
    # … so the text no longer matches and the view is decoded from what was read.
    doc = remember(3, "c", "2")
    assert doc["status"] == "applied"
    assert [i["statement"] for i in doc["current"]["items"]] == [
        "Rewritten elsewhere.",
        "Statement 2.",
        "Statement 3.",
    ]
    assert journal_views._VIEWS[scope_id] is not remembered


def test_a_commit_outside_atomic_blocks_runs_in_its_own_sqlite_transaction(demo_journal):
    if connection.vendor != "sqlite":
        pytest.skip("the DB-API transaction is SQLite's")
    with journal_store.write_transaction() as tx:
        assert connection.connection.in_transaction
        assert not connection.in_atomic_block  # not Django's atomic
        assert isinstance(tx.cursor, journal_store._NativeCursor)
    assert not connection.connection.in_transaction
    # An exception rolls it back and surfaces driver errors as Django's.
    from django.db import IntegrityError

    with pytest.raises(IntegrityError), journal_store.write_transaction() as tx:
        tx.cursor.execute("INSERT INTO preferences_preferencescope (id) VALUES (%s)", (None,))
    assert not connection.connection.in_transaction
    with CaptureQueriesContext(connection), journal_store.write_transaction():
        assert connection.in_atomic_block  # instrumented: Django's atomic


@pytest.mark.parametrize(
    "value",
    [
        BASE,
        BASE.replace(microsecond=0),
        dt.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC),
        dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.timezone(dt.timedelta(hours=2))),
    ],
)
def test_datetime_parameters_are_what_django_binds(db, value):
    assert journal_store.datetime_param(connection, value) == (
        connection.ops.adapt_datetimefield_value(value)
    )


@pytest.mark.parametrize(
    "receipt",
    [
        {"supersedes_operation_id": None},
        {"supersedes_operation_id": "op-0:1"},
        {"key": "k", "supersedes_operation_id": 'quote"d'},  # not a plain value
        {"operation_id": "ünï", "supersedes_operation_id": None},
    ],
)
def test_receipt_parameters_are_what_the_json_field_binds(db, receipt):
    if connection.vendor != "sqlite":
        pytest.skip("PostgreSQL binds the field's own adapter")
    receipt = {
        "operation_id": "op-1",
        "intent_hash": "ab" * 32,
        "key": "review.collaboration",
        "state": "active",
        **receipt,
    }
    assert journal_store._receipt_param(connection, receipt) == (
        journal_store._RECEIPT_FIELD.get_db_prep_save(receipt, connection)
    )
