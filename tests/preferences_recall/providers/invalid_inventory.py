"""Valid items with an invalid corpus inventory (an unknown writeback trigger)."""

import json
import sys

sys.stdin.read()
sys.stdout.write(
    json.dumps(
        {
            "schema_version": "semantic_preference_provider_response_v0",
            "items": [{"preference_ref": "p", "summary": "ok"}],
            "corpus_inventory": [
                {
                    "corpus_id": "project_preferences",
                    "scope_ref": "scope",
                    "read_role": "primary",
                    "write_mode": "provider_managed",
                    "write_actor_ref": "actor",
                    "source_of_truth": "repository",
                    "writeback_triggers": ["whenever_it_feels_right"],
                    "closure_policy": "none",
                }
            ],
        }
    )
)
