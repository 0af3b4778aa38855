"""Answers correctly, but leaves a detached child behind (which must be killed).

Usage: orphan_exit.py PIDFILE
"""

import json
import subprocess
import sys

sys.stdin.read()
child = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(120)"],
    stdin=subprocess.DEVNULL,
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
)
with open(sys.argv[1], "w") as handle:
    handle.write(str(child.pid))
sys.stdout.write(
    json.dumps({"schema_version": "semantic_preference_provider_response_v0", "items": []})
)
