"""Build a `reward_memory_recall_request_v0` packet with LoopX's own builder.

Runs under LoopX's interpreter (the leg's cached virtualenv), not ours:

    <loopx venv>/bin/python tests/loopx_leg/loopx_packet.py PROJECT_REF > packet.json

The corpus is the demo's `loopx-demo-pr-description` (soft_preference, surface
issue_fix.pr_description) in LoopX's corpus layout; the packet is what a LoopX host
sends to `reward_memory recall` (LoopX 2.1.1 has no CLI that prints it).
"""

import json
import sys
from datetime import UTC, datetime

from loopx.capabilities.reward_memory.application import build_reward_memory_recall_request

PROJECT_REF = sys.argv[1] if len(sys.argv) > 1 else "loopx-demo"
SURFACE = "issue_fix.pr_description"
CORPUS = {
    "corpus_id": "loopx-demo-pr-description",
    "class_id": "soft_preference",
    "provider_id": "local",
    "owner_ref": "user:demo-owner",
    "source_of_truth": "reviewed_reward_memory_records",
    "read_authority": "module_scoped",
    "write_authority": "provider_managed",
    "scope": {
        "workspace_ref": "loopx",
        "project_ref": PROJECT_REF,
        "surface_ids": [SURFACE],
        "user_ref": None,
        "peer_ref": None,
        "session_ref": None,
    },
    "freshness": {"mode": "source_truth_bound", "source_revision": None, "max_age_seconds": None},
    "lifecycle": {
        "state": "active",
        "supersedes": [],
        "superseded_by": None,
        "retirement_reason": None,
    },
    "retrieval": {
        "index_required": False,
        "readback_required": True,
        "application_receipt_required": True,
    },
    "maintenance": {
        "writeback_triggers": ["explicit_feedback"],
        "closure_policy": "append_event_then_readback",
        "retirement_authority": "user:demo-owner",
    },
    "privacy": {"visibility": "private", "raw_content_in_registry": False},
}
REQUEST = {
    "workspace_ref": "loopx",
    "project_ref": PROJECT_REF,
    "surface_id": SURFACE,
    "revision_ref": None,
    "mode": "function_boundary",
    "queries": [{"query": "PR description effect first", "query_summary": "pr description"}],
    "limit": 4,
    # Now, in the offset form LoopX writes (`+00:00`).
    "observed_at": datetime.now(UTC).replace(microsecond=0).isoformat(),
    "conflict_state": "clear",
    "freshness_context": {"source_truth_current": True},
    "raw_content_captured": False,
}
CHECKPOINT = {
    "verified": True,
    "corpus_id": CORPUS["corpus_id"],
    "workspace_ref": "loopx",
    "project_ref": PROJECT_REF,
    "surface_id": SURFACE,
    "read_authority": "module_scoped",
    # A server record, as ours requires (spec: Read authority): the allowlist entry of
    # the Agent the recall acts for (or an operator-granted read checkpoint's id).
    "source_ref": "allowlist:demo/author",
}
packet = build_reward_memory_recall_request(CORPUS, REQUEST, read_authority_checkpoint=CHECKPOINT)
print(json.dumps(packet))
