"""Exits 3 after writing secrets to stderr (and a plausible response to stdout)."""

import json
import sys

sys.stdin.read()
sys.stderr.write("Traceback: password=hunter2 AWS_SECRET_ACCESS_KEY=AKIA-STDERR-SECRET\n")
sys.stdout.write(
    json.dumps({"schema_version": "semantic_preference_provider_response_v0", "items": []})
)
sys.exit(3)
