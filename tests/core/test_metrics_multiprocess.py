"""In ``PROMETHEUS_MULTIPROC_DIR`` mode, counts recorded by separate processes (gunicorn
workers, Celery pool processes) are summed by one scrape, also after they exited."""

import os
import subprocess
import sys

import pytest

RECORD = (
    "import django; django.setup()\n"
    "from loopx_site.core import metrics\n"
    "metrics.recall_observed(area='reward_memory', corpus='prefs', status='empty', seconds=0.01)\n"
    "metrics.background_run_observed(task='hooks.recover', outcome='ok')\n"
)
SCRAPE = (
    "import django; django.setup()\n"
    "from loopx_site.core import metrics\n"
    "import sys; sys.stdout.write(metrics.exposition_events().decode())\n"
)


def _python(code: str, env: dict) -> str:
    run = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


@pytest.mark.slow
def test_counts_of_exited_processes_are_summed_by_one_scrape(tmp_path):
    env = {
        **os.environ,
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "loopx_site.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    for _ in range(2):
        _python(RECORD, env)
    text = _python(SCRAPE, env)
    assert 'loopx_recalls_total{area="reward_memory",corpus="prefs",status="empty"} 2.0' in text
    assert 'loopx_background_runs_total{code="",outcome="ok",task="hooks.recover"} 2.0' in text
