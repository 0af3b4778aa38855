"""A turn whose memory has nothing relevant says so (``reason_code: nothing_relevant``)
instead of handing the agent filler guidance; the replay keeps the reason."""

from tests.turn_recall.test_services import recall
from turn_recall import adapters, services
from turn_recall import contracts as c
from turn_recall.models import TurnRecallReceipt


def test_an_empty_recall_below_the_floor_is_reported_as_nothing_relevant(
    db, todo, turn_corpus, double, monkeypatch
):
    def floor_says_nothing(**_):
        return adapters.Recalled("empty", [], 1, [], nothing_relevant=True)

    monkeypatch.setattr(services.adapters, "recall", floor_says_nothing)
    result = recall()
    assert result["status"] == c.EMPTY
    assert result["reason_code"] == c.NOTHING_RELEVANT
    assert result["context"]["guidance"] == []
    assert TurnRecallReceipt.objects.get().reason_code == c.NOTHING_RELEVANT
    again = recall()
    assert again["reason_code"] == c.NOTHING_RELEVANT


def test_an_empty_recall_without_the_floor_keeps_no_reason(db, todo, turn_corpus, double):
    result = recall()
    assert result["status"] == c.EMPTY
    assert result["reason_code"] is None
