"""One item whose serialized size exceeds 8,000 bytes."""

import json
import sys

sys.stdin.read()
item = {"preference_ref": "big", "summary": "B" * 9000}
sys.stdout.write(
    json.dumps({"schema_version": "semantic_preference_provider_response_v0", "items": [item]})
)
