"""Build a `reward_memory_recall_request_v0` packet with LoopX's own builder.

Runs under LoopX's interpreter (the leg's cached virtualenv), not ours:

    <loopx venv>/bin/python tests/loopx_leg/loopx_packet.py PROJECT_REF > packet.json

The corpus is the demo's `loopx-demo-pr-description` (soft_preference, surface
issue_fix.pr_description) in LoopX's corpus layout; the packet is what a LoopX host
sends to `reward_memory recall` (LoopX 2.1.1 has no CLI that prints it).
`loopx_ingest_packet.py` builds LoopX's ingest packet on the same corpus.
"""

import json
import sys
from datetime import UTC, datetime

SURFACE = "issue_fix.pr_description"
CORPUS_ID = "loopx-demo-pr-description"
OWNER = "user:demo-owner"


def demo_corpus(project_ref: str) -> dict:
    """The demo's `loopx-demo-pr-description` corpus in LoopX's corpus layout."""
    return {
        "corpus_id": CORPUS_ID,
        "class_id": "soft_preference",
        "provider_id": "local",
        "owner_ref": OWNER,
        "source_of_truth": "reviewed_reward_memory_records",
        "read_authority": "module_scoped",
        "write_authority": "provider_managed",
        "scope": {
            "workspace_ref": "loopx",
            "project_ref": project_ref,
            "surface_ids": [SURFACE],
            "user_ref": None,
            "peer_ref": None,
            "session_ref": None,
        },
        "freshness": {
            "mode": "source_truth_bound",
            "source_revision": None,
            "max_age_seconds": None,
        },
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
            "retirement_authority": OWNER,
        },
        "privacy": {"visibility": "private", "raw_content_in_registry": False},
    }


def now() -> str:
    """Now, in the offset form LoopX writes (`+00:00`)."""
    return datetime.now(UTC).replace(microsecond=0).isoformat()


def main() -> None:
    from loopx.capabilities.reward_memory.application import build_reward_memory_recall_request

    project_ref = sys.argv[1] if len(sys.argv) > 1 else "loopx-demo"
    request = {
        "workspace_ref": "loopx",
        "project_ref": project_ref,
        "surface_id": SURFACE,
        "revision_ref": None,
        "mode": "function_boundary",
        "queries": [{"query": "PR description effect first", "query_summary": "pr description"}],
        "limit": 4,
        "observed_at": now(),
        "conflict_state": "clear",
        "freshness_context": {"source_truth_current": True},
        "raw_content_captured": False,
    }
    checkpoint = {
        "verified": True,
        "corpus_id": CORPUS_ID,
        "workspace_ref": "loopx",
        "project_ref": project_ref,
        "surface_id": SURFACE,
        "read_authority": "module_scoped",
        # A server record, as ours requires (spec: Read authority): the allowlist entry
        # of the Agent the recall acts for (or an operator-granted read checkpoint's id).
        "source_ref": "allowlist:demo/author",
    }
    packet = build_reward_memory_recall_request(
        demo_corpus(project_ref), request, read_authority_checkpoint=checkpoint
    )
    print(json.dumps(packet))


if __name__ == "__main__":
    main()
