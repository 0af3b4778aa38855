"""Prints 1 MiB to stdout (in a JSON-looking envelope)."""

import sys

sys.stdin.read()
out = sys.stdout
out.write('{"schema_version": "semantic_preference_provider_response_v0", "items": [')
out.write('{"preference_ref": "x", "summary": "' + "A" * (1024 * 1024) + '"}]}')
out.flush()
