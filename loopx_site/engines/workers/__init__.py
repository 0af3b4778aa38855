"""``loopx_site.engines.workers``: fork-based children that run a callable on bytes within
a deadline, one per call or kept per owner (README.md)."""

from loopx_site.engines.workers.pool import (
    CRASHED,
    KILL_GRACE_S,
    OVER_BUDGET,
    TIMED_OUT,
    Answer,
    Slots,
    Work,
    finish_later,
    idle_workers,
    reset,
    run_in_child,
    run_in_worker,
)

__all__ = [
    "CRASHED",
    "KILL_GRACE_S",
    "OVER_BUDGET",
    "TIMED_OUT",
    "Answer",
    "Slots",
    "Work",
    "finish_later",
    "idle_workers",
    "reset",
    "run_in_child",
    "run_in_worker",
]
