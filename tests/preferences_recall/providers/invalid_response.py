"""Valid JSON that is not a provider response (wrong schema, extra fields)."""

import json
import sys

sys.stdin.read()
sys.stdout.write(json.dumps({"schema_version": "something_else_v0", "items": "nope"}))
