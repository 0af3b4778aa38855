"""A read-only probe that succeeds (and may record that it ran)."""

import sys

if len(sys.argv) > 1:
    with open(sys.argv[1], "a") as handle:
        handle.write("probed\n")
sys.exit(0)
