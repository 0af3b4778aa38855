"""Server processes freeze their start-up heap once loaded (``loopx_site.engines.heap``)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # starts a Python interpreter

ROOT = Path(__file__).resolve().parents[3]


def _run(code: str, **env) -> list[int]:
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return [int(word) for word in out.stdout.split()]


@pytest.mark.parametrize("entry", ["loopx_site.wsgi", "loopx_site.asgi"])
def test_the_server_entry_points_freeze_what_they_loaded(entry):
    (frozen,) = _run(
        f"import gc, {entry}; print(gc.get_freeze_count())",
        DJANGO_SETTINGS_MODULE="loopx_site.settings",
    )
    assert frozen > 10_000  # Django, the URLconf, the apps: out of every later collection


def test_freeze_collects_garbage_first_and_later_garbage_is_still_collected():
    before_dead, frozen, collected, after_dead = _run(
        "import gc, weakref\n"
        "from loopx_site.engines import heap\n"
        "class Cycle:\n"
        "    pass\n"
        "gc.disable()\n"  # nothing collects on its own while the test sets up
        "a = Cycle(); a.me = a; before = weakref.ref(a); del a\n"
        "frozen = heap.freeze()\n"
        "b = Cycle(); b.me = b; after = weakref.ref(b); del b\n"
        "collected = gc.collect()\n"
        "print(int(before() is None), frozen, collected, int(after() is None))\n"
    )
    assert before_dead == 1  # collected by the freeze, not frozen as garbage forever
    assert frozen > 0
    assert collected >= 1
    assert after_dead == 1  # a cycle made after the freeze is still collected


_REUSE = (
    "import resource, numpy as np\n"
    "from loopx_site.engines import heap\n"
    "tuned = {tuned} and heap.keep_freed_memory()\n"
    "batch = [np.ones(1 << 20) for _ in range(4)]\n"  # 4 × 8 MB, freed together
    "del batch\n"
    "before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
    "batch = [np.ones(1 << 20) for _ in range(4)]\n"
    "print(int(tuned), resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)\n"
)


def test_freed_arrays_are_reused_warm_instead_of_page_faulting_again():
    if not sys.platform.startswith("linux"):
        pytest.skip("glibc's allocator")
    default_tuned, default_faults = _run(_REUSE.format(tuned=False))
    tuned, tuned_faults = _run(_REUSE.format(tuned=True))
    if not tuned:
        pytest.skip("not glibc's allocator")
    assert default_tuned == 0
    # glibc's default maps the second batch afresh: a fault per page (or huge page) again
    assert default_faults > 0
    assert tuned_faults * 10 <= default_faults


def test_the_server_entry_points_keep_freed_memory():
    faults, supported = _run(
        "import loopx_site.wsgi, resource, numpy as np\n"
        "from loopx_site.engines import heap\n"
        "batch = [np.ones(1 << 20) for _ in range(4)]; del batch\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
        "batch = [np.ones(1 << 20) for _ in range(4)]\n"
        "faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before\n"
        "print(faults, int(heap.keep_freed_memory()))\n",  # (after: does glibc take it?)
        DJANGO_SETTINGS_MODULE="loopx_site.settings",
    )
    if not supported:
        pytest.skip("not glibc's allocator")
    assert faults < 100  # 32 MB touched again without faulting its pages in
