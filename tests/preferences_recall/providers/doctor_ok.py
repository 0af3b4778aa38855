"""A read-only probe that succeeds (and may record that it ran).

``doctor_ok.py [MARKER]`` appends ``probed`` to MARKER; ``--fail-if FILE`` exits 3 when
FILE exists (a provider that breaks after it was installed).
"""

import os
import sys

args = sys.argv[1:]
if args[:1] == ["--fail-if"]:
    if os.path.exists(args[1]):
        sys.exit(3)
    args = args[2:]
if args:
    with open(args[0], "a") as handle:
        handle.write("probed\n")
sys.exit(0)
