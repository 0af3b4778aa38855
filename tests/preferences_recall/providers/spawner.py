"""Spawns a child that would outlive it, records the child's pid, then hangs.

Usage: spawner.py PIDFILE
"""

import subprocess
import sys
import time

child = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(120)"],
    stdin=subprocess.DEVNULL,
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
)
with open(sys.argv[1], "w") as handle:
    handle.write(str(child.pid))
time.sleep(120)
