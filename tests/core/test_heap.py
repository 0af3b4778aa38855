"""Server processes freeze their start-up heap once loaded (``loopx_site.core.heap``)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("entry", ["loopx_site.wsgi", "loopx_site.asgi"])
def test_the_server_entry_points_freeze_what_they_loaded(entry):
    code = f"import gc, {entry}; print(gc.get_freeze_count(), gc.get_count()[2])"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "loopx_site.settings"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    frozen, _ = map(int, out.stdout.split())
    assert frozen > 10_000  # Django, the URLconf, the apps: out of every later collection


def test_freeze_collects_garbage_first_and_keeps_collecting_new_objects():
    import gc

    from loopx_site.core import heap

    code = (
        "import gc\n"
        "from loopx_site.core import heap\n"
        "class Cycle:\n"
        "    pass\n"
        "a = Cycle(); a.me = a; del a\n"  # garbage before the freeze
        "frozen = heap.freeze()\n"
        "b = Cycle(); b.me = b; del b\n"  # garbage after it
        "print(frozen, gc.collect())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    frozen, collected = map(int, out.stdout.split())
    assert frozen > 0
    assert collected >= 1  # the cycle made after the freeze is still collected
    assert heap.freeze.__module__ == "loopx_site.core.heap"
    assert gc.isenabled()
