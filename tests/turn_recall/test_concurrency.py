"""Racing executions of one turn store one receipt and give every caller the same
guidance (real threads, each on its own database connection)."""

import threading

import pytest
from django.db import connection

from tests.turn_recall.conftest import packet, remember_guidance
from turn_recall import documents, services
from turn_recall.models import TurnRecallReceipt

pytestmark = pytest.mark.django_db(transaction=True)

GUIDANCE = "Re-read the acceptance criteria before resuming a flaky test fix."


def race(n: int, fn):
    barrier = threading.Barrier(n)
    results: list = [None] * n

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=10)
            results[i] = fn()
        except Exception as exc:  # reported by the assertions
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return results


@pytest.mark.parametrize("n", [2, 6])
def test_racing_executions_of_one_turn_store_one_receipt(todo, turn_corpus, double, n):
    remember_guidance(GUIDANCE)
    doc = packet()

    def execute():
        return documents.turn_recall(
            services.agent_turn_recall(
                goal_id="demo",
                agent_id="author",
                turn_instance_id="turn-1",
                quota_decision=doc,
                execute=True,
            )
        )

    results = race(n, execute)
    assert not [r for r in results if isinstance(r, Exception)], results
    assert TurnRecallReceipt.objects.count() == 1
    assert {r["status"] for r in results} <= {"applied", "replayed"}
    assert {r["turn_recall_id"] for r in results} == {results[0]["turn_recall_id"]}
    for r in results:
        assert [g["content_summary"] for g in r["context"]["guidance"]] == [GUIDANCE]
    assert execute()["status"] == "replayed"
