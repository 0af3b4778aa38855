"""``selectors.recall_rows`` and the statement behind it (``selectors.recall_read``, the
recall's one-statement row read, with and without the local provider's documents)
agree with ``selectors.readable_records`` (the rule) on every state a record can be
in."""

import datetime as dt
import itertools

from django.db import IntegrityError, transaction

from loopx_site.core import clock
from reward_memory import contracts as c
from reward_memory import selectors
from reward_memory.models import AuthorityCheckpoint, Corpus, LocalProviderDocument, MemoryRecord
from tests.reward_memory import factories as f


def _checkpoint(checkpoint_id, *, expires_at=None, revoked_at=None):
    return AuthorityCheckpoint.objects.create(
        checkpoint_id=checkpoint_id,
        project=f.PROJECT,
        actor="user:maint-1",
        role="maintainer",
        action_scopes=[],
        verified_by="admin",
        verified_at=clock.now() - dt.timedelta(days=1),
        expires_at=expires_at,
        revoked_at=revoked_at,
        revoked_by="admin" if revoked_at else "",
    )


def test_recall_rows_readable_is_readable_records_in_every_state(db, agents):
    f.register("prefs", agents=[("demo", "author")])
    ref = f.ingested(event=f.scoped_event(), goal_id="demo", agent_id="author", execute=True)[
        "record_ref"
    ]
    record = MemoryRecord.objects.get(record_ref=ref)
    corpus = Corpus.objects.get(corpus_id="prefs")
    scope_key = selectors.provider_binding(corpus).scope_key
    doc = LocalProviderDocument.objects.get(resource_ref=record.provider_resource_ref)
    forms = ((None, {}), (scope_key, {doc.resource_ref: doc.content}))
    now = clock.now()
    hour = dt.timedelta(hours=1)
    checkpoints = [
        None,
        _checkpoint("live"),
        _checkpoint("live-expiring", expires_at=now + hour),
        _checkpoint("expired", expires_at=now - hour),
        _checkpoint("revoked", revoked_at=now - hour),
    ]
    states = [c.ACTIVE, c.RETIRED, c.REVOKED, c.SUPERSEDED, c.EXPIRED, c.STALE]
    combos = itertools.product(
        states,
        [None, now + hour, now - hour, now],  # expires_at (now: expired at the boundary)
        [now, None],  # readback_verified_at
        [c.SOFT_PREFERENCE, c.HARD_POLICY],
        checkpoints,
    )
    seen = set()
    for state, expires, verified, memory_class, checkpoint in combos:
        try:
            with transaction.atomic():
                MemoryRecord.objects.filter(pk=record.pk).update(
                    lifecycle_state=state,
                    expires_at=expires,
                    readback_verified_at=verified,
                    memory_class=memory_class,
                    authority_checkpoint=checkpoint,
                )
        except IntegrityError:
            continue  # a state the check constraints refuse
        for goal_id, agent_id in (("demo", "author"), ("demo", "reviewer"), ("other", "x")):
            expected = (
                selectors.readable_records(
                    goal_id=goal_id, agent_id=agent_id, corpus=corpus, now=now
                )
                .filter(pk=record.pk)
                .exists()
            )
            rows = selectors.recall_rows(
                [record.provider_resource_ref],
                goal_id=goal_id,
                agent_id=agent_id,
                corpus=corpus,
                now=now,
            )
            got = rows[record.provider_resource_ref]
            assert got.readable is expected, (state, expires, verified, memory_class, checkpoint)
            seen.add(expected)
            assert got.record_ref == ref
            assert got.lifecycle_state == state
            assert got.expires_at == expires
            # the statement behind it, records only and with the local provider's
            # documents joined (what a recall runs): the same rule, the same expiry
            for documents_of, contents in forms:
                read, texts = selectors.recall_read(
                    [record.provider_resource_ref],
                    goal_id=goal_id,
                    agent_id=agent_id,
                    corpus=corpus,
                    now=now,
                    documents_of=documents_of,
                )
                row = read[record.provider_resource_ref]
                assert row.readable is expected, documents_of
                assert row.expired is (expires is not None and expires <= now)
                assert (row.lifecycle_state, row.surface) == (state, record.surface)
                assert texts == contents
    assert seen == {True, False}  # both outcomes were reached


def test_recall_rows_loads_the_rendered_columns_like_the_orm(db, agents):
    f.register("prefs", agents=[("demo", "author")])
    ref = f.ingested(event=f.scoped_event(), goal_id="demo", agent_id="author", execute=True)[
        "record_ref"
    ]
    record = MemoryRecord.objects.select_related("review").get(record_ref=ref)
    corpus = Corpus.objects.get(corpus_id="prefs")
    got = selectors.recall_rows(
        [record.provider_resource_ref, "local:prefs/none"],
        goal_id="demo",
        agent_id="author",
        corpus=corpus,
        now=clock.now(),
    )
    assert list(got) == [record.provider_resource_ref]  # an unknown ref has no row
    row = got[record.provider_resource_ref]
    for name in selectors.RESULT_COLUMNS:
        assert getattr(row, name) == getattr(record, name), name
    assert (row.review.review_id if row.review else None) == (
        record.review.review_id if record.review else None
    )
    assert row.readable is True
    inactive = Corpus.objects.get(corpus_id="prefs")
    inactive.active = False
    assert not selectors.recall_rows(
        [record.provider_resource_ref],
        goal_id="demo",
        agent_id="author",
        corpus=inactive,
        now=clock.now(),
    )[record.provider_resource_ref].readable
