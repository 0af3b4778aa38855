"""The provider of LoopX's ``examples/issue-fix-pr-description-builder-smoke.py``, behaviour
for behaviour: ``argv[1]`` is a call counter file it increments, it consumes the request
and returns one preference plus a one-corpus inventory."""

import json
import sys
from pathlib import Path

counter = Path(sys.argv[1])
calls = int(counter.read_text() or "0") if counter.exists() else 0
counter.write_text(str(calls + 1))
json.load(sys.stdin)
response = {
    "schema_version": "semantic_preference_provider_response_v0",
    "items": [
        {
            "preference_ref": "viking://user/preferences/pr-description-chinese",
            "summary": "Use concise structured Chinese for PR descriptions",
        }
    ],
    "corpus_inventory": [
        {
            "corpus_id": "project_peer_preferences",
            "scope_ref": "viking://user/pilot/peers/project-example/memories/preferences",
            "read_role": "primary",
            "write_mode": "provider_managed",
            "write_actor_ref": "project-example",
            "source_of_truth": "repository_revision_and_explicit_feedback",
            "writeback_triggers": ["explicit_feedback", "source_truth_changed"],
            "closure_policy": "write_wait_l2_read_scoped_recall",
        }
    ],
}
json.dump(response, sys.stdout)
