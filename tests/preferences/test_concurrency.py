"""Conditional writes under real concurrency: separate processes and threads racing the
same expected revision, on the suite's database (SQLite file or PostgreSQL)."""

import json
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest
from django.db import connection

from loopx_site.core import services as core_services
from loopx_site.core.errors import DomainError
from preferences import services
from preferences.models import PreferenceOperation
from tests.helpers import ROOT, subprocess_env

WORKER = Path(__file__).with_name("race_worker.py")


@pytest.fixture
def demo_scope(transactional_db):
    core_services.register_goal(goal_id="demo", agent_ids=["author"], state_ref="s")


def race_processes(tmp_path, specs):
    """Start one process per (operation_id, expected, statement); release them together."""
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
    outcomes = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        outcomes.append(json.loads(out.strip().splitlines()[-1]))
    return outcomes


def assert_gap_free():
    sequences = list(
        PreferenceOperation.objects.order_by("sequence").values_list(
            "sequence", "resulting_revision"
        )
    )
    assert sequences == [(n, n) for n in range(1, len(sequences) + 1)]


def journal_size():
    return PreferenceOperation.objects.count()


@pytest.mark.slow
def test_eight_processes_racing_the_first_write_commit_exactly_once(demo_scope, tmp_path):
    outcomes = race_processes(tmp_path, [(f"op-{n}", "none", f"s{n}") for n in range(8)])
    tally = Counter(o.get("status") or o["error"] for o in outcomes)
    assert tally == {"applied": 1, "revision_conflict": 7}
    assert journal_size() == 1
    assert_gap_free()


@pytest.mark.slow
def test_eight_processes_racing_a_later_revision_commit_exactly_once(demo_scope, tmp_path):
    services.remember(
        goal_id="demo",
        agent_id="author",
        key="k",
        statement="first",
        source_ref="r",
        source_quote="q",
        expected_revision="none",
        operation_id="seed",
        execute=True,
    )
    outcomes = race_processes(tmp_path, [(f"op-{n}", "1", f"s{n}") for n in range(8)])
    tally = Counter(o.get("status") or o["error"] for o in outcomes)
    assert tally == {"applied": 1, "revision_conflict": 7}
    assert journal_size() == 2
    assert_gap_free()


@pytest.mark.slow
def test_eight_processes_racing_one_duplicated_operation_commit_once_and_replay(
    demo_scope, tmp_path
):
    outcomes = race_processes(tmp_path, [("same-op", "none", "same")] * 8)
    tally = Counter(o.get("status") or o["error"] for o in outcomes)
    assert tally == {"applied": 1, "replayed": 7}
    assert journal_size() == 1
    assert_gap_free()


def race_threads(n, call):
    barrier = threading.Barrier(n)
    results = []
    lock = threading.Lock()

    def run(i):
        barrier.wait()
        try:
            outcome = call(i)["status"]
        except DomainError as exc:
            outcome = exc.code
        finally:
            connection.close()
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return Counter(results)


@pytest.mark.parametrize("writers", [2, 8, 32])
def test_threads_racing_the_same_expected_revision_commit_exactly_once(demo_scope, writers):
    tally = race_threads(
        writers,
        lambda i: services.remember(
            goal_id="demo",
            agent_id="author",
            key="k",
            statement=f"s{i}",
            source_ref="r",
            source_quote="q",
            expected_revision="none",
            operation_id=f"op-{i}",
            execute=True,
        ),
    )
    assert tally == {"applied": 1, "revision_conflict": writers - 1}
    assert_gap_free()


@pytest.mark.parametrize("writers", [2, 8])
def test_threads_racing_a_duplicated_operation_id_commit_once_and_replay(demo_scope, writers):
    tally = race_threads(
        writers,
        lambda i: services.remember(
            goal_id="demo",
            agent_id="author",
            key="k",
            statement="same",
            source_ref="r",
            source_quote="q",
            expected_revision="none",
            operation_id="same-op",
            execute=True,
        ),
    )
    assert tally == {"applied": 1, "replayed": writers - 1}
    assert journal_size() == 1
