"""Shared set-up for benchmarks: Django on a throwaway SQLite database (or the
DATABASE_URL given), migrated, with the project importable."""

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def django_on_temp_db() -> Path | None:
    sys.path.insert(0, str(ROOT))
    tmp = None
    if "DATABASE_URL" not in os.environ:
        tmp = Path(tempfile.mkdtemp(prefix="loopx-bench-")) / "bench.sqlite3"
        os.environ["DATABASE_URL"] = f"sqlite:///{tmp}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "loopx_site.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    return tmp
