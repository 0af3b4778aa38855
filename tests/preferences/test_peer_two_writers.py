"""Two writers that both start from the same read: the journal commits one and rejects
the stale one (``bench/peer_bench.py`` shows LangGraph's ``SqliteStore.put`` keeping only
the last of the two edits). Our side uses only our code; the peer side runs only where
``langgraph-checkpoint-sqlite`` is installed (``make bench-peers``)."""

import sqlite3
import threading

import pytest

from loopx_site.core.errors import DomainError
from preferences import services

OWNER = {"source_ref": "owner-message", "source_quote": "As the owner said."}


def _remember(statement, expected, operation_id):
    return services.remember(
        goal_id="demo",
        agent_id="author",
        key="review",
        statement=statement,
        expected_revision=expected,
        operation_id=operation_id,
        execute=True,
        **OWNER,
    )


def test_second_of_two_writers_from_one_read_is_rejected_and_the_first_edit_kept(scope):
    base = _remember("base", "none", "op-base")["state"]["revision"]
    seen_by_a = services.read(goal_id="demo", agent_id="author")["revision"]
    seen_by_b = services.read(goal_id="demo", agent_id="author")["revision"]
    assert seen_by_a == seen_by_b == base

    _remember("base + A", seen_by_a, "op-a")
    with pytest.raises(DomainError) as exc:
        _remember("base + B", seen_by_b, "op-b")

    assert exc.value.code == "revision_conflict"
    view = services.read(goal_id="demo", agent_id="author")
    assert [s["statement"] for s in view["items"]] == ["base + A"]
    # The rejected writer re-reads, reconciles and commits on the new revision.
    _remember("base + A + B", view["revision"], "op-b2")
    final = services.read(goal_id="demo", agent_id="author")["items"]
    assert [s["statement"] for s in final] == ["base + A + B"]


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_writers_from_one_read_commit_exactly_once(scope):
    base = _remember("base", "none", "op-base")["state"]["revision"]
    start, outcomes = threading.Barrier(2), []

    def writer(name):
        from django.db import connection

        start.wait()
        try:
            _remember(f"base + {name}", base, f"op-{name}")
            outcomes.append("applied")
        except DomainError as exc:
            outcomes.append(exc.code)
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in "AB"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert sorted(outcomes) == ["applied", "revision_conflict"]
    assert len(services.read(goal_id="demo", agent_id="author")["items"]) == 1


def test_peer_store_unconditional_put_keeps_only_the_last_of_two_edits(tmp_path):
    try:
        from langgraph.store.sqlite import SqliteStore
    except ImportError:
        pytest.skip(
            "langgraph-checkpoint-sqlite is not installed here (peer-only; `make bench-peers`)"
        )
    store = SqliteStore(sqlite3.connect(str(tmp_path / "s.db"), check_same_thread=False))
    store.setup()
    store.put(("p",), "review", {"notes": ["base"]})
    first, second = store.get(("p",), "review").value, store.get(("p",), "review").value
    store.put(("p",), "review", {"notes": [*first["notes"], "A"]})
    store.put(("p",), "review", {"notes": [*second["notes"], "B"]})
    assert store.get(("p",), "review").value["notes"] == ["base", "B"]  # A is lost
