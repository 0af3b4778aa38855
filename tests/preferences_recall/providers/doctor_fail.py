"""A probe that fails with secrets on stderr."""

import sys

sys.stderr.write("cannot reach service: token=PROBE-SECRET-TOKEN\n")
sys.exit(1)
