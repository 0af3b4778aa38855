"""Tries to read the file named in argv[1]; prints what happened as JSON."""

import json
import sys

try:
    with open(sys.argv[1], "rb") as handle:
        outcome = {"read": len(handle.read())}
except PermissionError:
    outcome = {"denied": True}
print(json.dumps(outcome))
