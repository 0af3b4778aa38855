"""The cluster leg's metrics scenario reads the series the service really exposes: its
preference-recall reading (``tests/cluster/metrics.py``) counts the demo config's
executed recalls under ``area="preferences"`` from a real exposition, and nothing of
another area or config."""

from loopx_site.core import metrics as service_metrics
from tests.cluster import metrics


def _exposition() -> str:
    return service_metrics.exposition_events().decode()


def test_preference_recall_reading_moves_with_the_demo_configs_recalls_only():
    before = metrics.preference_recalls(_exposition())
    service_metrics.recall_observed(area="preferences", corpus="demo", status="ok", seconds=0.01)
    service_metrics.recall_observed(area="preferences", corpus="demo", status="empty", seconds=0.2)
    service_metrics.recall_observed(area="reward_memory", corpus="demo", status="ok", seconds=0.1)
    service_metrics.recall_observed(area="preferences", corpus="other", status="ok", seconds=0.1)
    after = metrics.preference_recalls(_exposition())
    assert {k: after[k] - before[k] for k in after} == {"recalls": 2, "timed": 2}


def test_total_without_labels_sums_every_sample_of_the_family():
    text = (
        'loopx_recalls_total{area="preferences",corpus="demo",status="ok"} 2.0\n'
        'loopx_recalls_total{area="reward_memory",corpus="demo",status="ok"} 3.0\n'
        "loopx_recalls_created 1.0\n"
    )
    assert metrics.total(text, "loopx_recalls_total") == 5
    assert metrics.total(text, "loopx_recalls_total", area="preferences", status="ok") == 2
    assert metrics.total(text, "loopx_recalls_total", status="empty") == 0
