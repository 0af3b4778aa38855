"""A provider that reports what it can see of its own sandbox (never of the request).

Items: ``parent_environ`` (``readable`` or ``denied``: can it read the server's
``/proc/<ppid>/environ``?), ``env`` (its environment variable names), ``scope`` (the
``LOOPX_RECALL_*`` values it got, as JSON), ``fds`` (its open descriptors), ``cwd``,
``limits`` (its soft CPU / address-space / process limits, as JSON).
"""

import json
import os
import resource
import sys

sys.stdin.read()
try:
    with open(f"/proc/{os.getppid()}/environ", "rb") as handle:
        handle.read()
    parent = "readable"
except OSError:
    parent = "denied"
fds = sorted(int(fd) for fd in os.listdir("/proc/self/fd"))
limits = {
    name: resource.getrlimit(getattr(resource, name))[0]
    for name in ("RLIMIT_CPU", "RLIMIT_AS", "RLIMIT_NPROC")
}
scope = {k: v for k, v in os.environ.items() if k.startswith("LOOPX_RECALL_")}
items = [
    ("parent_environ", parent),
    ("env", ",".join(sorted(os.environ))),
    ("scope", json.dumps(scope, sort_keys=True)),
    ("fds", ",".join(map(str, fds))),
    ("cwd", os.getcwd()),
    ("limits", json.dumps(limits, sort_keys=True)),
]
json.dump(
    {
        "schema_version": "semantic_preference_provider_response_v0",
        "items": [{"preference_ref": ref, "summary": summary} for ref, summary in items],
    },
    sys.stdout,
)
