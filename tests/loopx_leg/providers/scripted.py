"""A scripted semantic-preference provider for the LoopX leg (both sides run this one).

Reads `semantic_preference_provider_request_v0` on stdin and answers a fixed
`semantic_preference_provider_response_v0` chosen by argv[1]; with argv[2] it also writes
the request it received there (the leg compares what each host sent).
"""

import json
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else "items"
request = json.loads(sys.stdin.read() or "{}")
if len(sys.argv) > 2:
    with open(sys.argv[2], "w", encoding="utf-8") as fh:
        json.dump(request, fh, sort_keys=True)

ITEMS = [
    {
        "preference_ref": "pref-one",
        "summary": "Keep PR descriptions short.",
        "score": 0.9,
        "extra_field": {"kept": True},
    },
    {"preference_ref": "pref-two", "summary": "Name the reviewer.", "score": 0.5},
    {"preference_ref": "pref-three", "summary": "Link the issue.", "score": 0.1},
]
INVENTORY = [
    {
        "corpus_id": "project_preferences",
        "scope_ref": "project-leg",
        "read_role": "primary",
        "write_mode": "provider_managed",
        "write_actor_ref": "provider-writer",
        "source_of_truth": "provider-store",
        "writeback_triggers": ["source_truth_changed", "explicit_feedback"],
        "closure_policy": "write_wait_l2_read_scoped_recall",
    },
    {
        "corpus_id": "reference_notes",
        "scope_ref": "project-leg",
        "read_role": "reference",
        "write_mode": "read_only",
        "source_of_truth": "provider-store",
    },
]

if MODE == "fail":
    sys.exit(3)
if MODE == "garbage":
    print("not json")
    sys.exit(0)
response = {"schema_version": "semantic_preference_provider_response_v0", "items": ITEMS}
if MODE == "inventory":
    response["corpus_inventory"] = INVENTORY
if MODE == "nosummary":  # LoopX passes any item object through
    response["items"] = [{"preference_ref": "pref-one", "statement": "No summary field."}]
if MODE == "empty":
    response["items"] = []
print(json.dumps(response))
