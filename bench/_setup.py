"""Shared set-up for benchmarks: Django on a throwaway SQLite database (or the
DATABASE_URL given), migrated, with the project importable."""

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def django_on_temp_db() -> Path | None:
    sys.path.insert(0, str(ROOT))
    tmp = None
    if "DATABASE_URL" not in os.environ:
        folder = tempfile.mkdtemp(prefix="loopx-bench-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)  # no temp DB left behind
        tmp = Path(folder) / "bench.sqlite3"
        os.environ["DATABASE_URL"] = f"sqlite:///{tmp}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "loopx_site.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    return tmp


def progress_bar(**kwargs):
    """A stderr progress bar (counts and rate) for long benchmark loops; silent when
    stderr is not a terminal, so the JSON line on stdout stays the only output."""
    from loopx_site.core.progress import bar

    return bar(fmt="json", **kwargs)
