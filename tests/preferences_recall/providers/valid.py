"""A well-behaved provider: items derived from the request, plus a corpus inventory.

Options: --items N (default 3), --no-inventory, --marker FILE (append one line per call),
--echo-env (one item whose summary lists the environment variable names it received),
--echo-request (one item whose summary is the canonical request it received).
"""

import argparse
import json
import os
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--items", type=int, default=3)
parser.add_argument("--no-inventory", action="store_true")
parser.add_argument("--marker")
parser.add_argument("--echo-env", action="store_true")
parser.add_argument("--echo-request", action="store_true")
args = parser.parse_args()

request = json.loads(sys.stdin.read() or "{}")
if args.marker:
    with open(args.marker, "a") as handle:
        handle.write("called\n")
items = [
    {"preference_ref": f"pref-{i}", "summary": f"Preference {i} for {request.get('surface')}"}
    for i in range(args.items)
]
if args.echo_env:
    items = [{"preference_ref": "env", "summary": ",".join(sorted(os.environ))}]
if args.echo_request:
    items = [{"preference_ref": "request", "summary": json.dumps(request, sort_keys=True)}]
response = {"schema_version": "semantic_preference_provider_response_v0", "items": items}
if not args.no_inventory:
    response["corpus_inventory"] = [
        {
            "corpus_id": "project_preferences",
            "scope_ref": "provider-owned-scope-reference",
            "read_role": "primary",
            "write_mode": "provider_managed",
            "write_actor_ref": "provider-owned-actor-reference",
            "source_of_truth": "repository_revision_and_explicit_feedback",
            "writeback_triggers": ["explicit_feedback", "source_truth_changed"],
            "closure_policy": "write_wait_l2_read_scoped_recall",
        }
    ]
sys.stdout.write(json.dumps(response))
