"""Shared set-up for benchmarks: Django on a throwaway SQLite database (or the
DATABASE_URL given), migrated, with the project importable; the durability settings of
the database in use, printed beside every figure; percentiles."""

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


def durability() -> dict:
    """What a commit promises on the connection in use (printed beside each figure)."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("PRAGMA journal_mode")
            journal = cursor.fetchone()[0]
            cursor.execute("PRAGMA synchronous")
            sync = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}.get(cursor.fetchone()[0])
            return {"backend": "sqlite", "journal_mode": journal, "synchronous": sync}
        settings = {}
        for name in ("fsync", "synchronous_commit", "full_page_writes", "wal_level"):
            cursor.execute(f"SHOW {name}")
            settings[name] = cursor.fetchone()[0]
        return {"backend": "postgresql", **settings}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]
