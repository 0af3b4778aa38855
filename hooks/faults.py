"""Named fault-injection points for crash-recovery tests.

``LOOPX_HOOKS_FAULT=<point>:kill`` makes the process SIGKILL itself when it reaches
``<point>``; unset (the default, and in production) the points do nothing. Used by the
test that kills ``turn settle --execute`` between the primary commit and the hook phase
and then recovers with ``hooks replay``.
"""

import os
import signal

POINTS = ("after_primary_commit",)


def fault_point(name: str) -> None:
    spec = os.environ.get("LOOPX_HOOKS_FAULT")
    if spec and spec == f"{name}:kill":
        os.kill(os.getpid(), signal.SIGKILL)
