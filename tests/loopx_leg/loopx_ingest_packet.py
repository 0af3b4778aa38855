"""Build LoopX's full `reward-memory ingest-event` packet with LoopX's own code.

Runs under LoopX's interpreter (the leg's cached virtualenv), not ours:

    <loopx venv>/bin/python tests/loopx_leg/loopx_ingest_packet.py [VARIANT] > packet.json

The packet is `{adapter, event, corpus, standing_policy, provider_binding, observed_at}`
— what `loopx reward-memory ingest-event --input` takes without a route (a no-write
evaluation) — for the demo's registered corpus `loopx-demo-pr-description`: the corpus,
standing policy and provider binding are passed through LoopX's normalizers and the
event through LoopX's scoped-feedback adapter, so every part is one LoopX accepts as it
is. VARIANT `clear` (default) is an event both stores' guards pass (its actor holds the
maintainer role through the demo's role checkpoint); `unverified-actor` names an actor no
server record binds to a role; `conflicted` carries `guard_context.conflict_state:
unresolved`; `hard-policy` asks a hard_policy write of the advisory corpus.
"""

import json
import sys

from loopx_packet import CORPUS_ID, OWNER, SURFACE, demo_corpus, now

EVENT = {
    "schema_version": "scoped_feedback_reward_memory_event_v0",
    "feedback_ref": "feedback:loopx-demo/pr/42",
    "workspace_ref": "loopx",
    "project_ref": "loopx-demo",
    "surface_id": SURFACE,
    "target_class": "soft_preference",
    "content_summary": "Lead PR descriptions with the user-visible effect.",
    "source": {
        "source_kind": "maintainer_feedback",
        "source_ref": "review:loopx-demo#42/r-1",
        "actor_ref": "user:demo-maintainer",
        "actor_role": "maintainer",
    },
    "reasoning": {"summary": "Two maintainers asked for the effect first.", "confidence": "medium"},
    "guard_context": {
        "source_freshness": "current",
        "conflict_state": "clear",
        "current_artifact_verified": True,
    },
    "requested_action_scopes": [],
    "raw_content_captured": False,
}
POLICY = {
    "schema_version": "reward_memory_standing_policy_v0",
    "policy_id": "policy:loopx-demo:pr-description",
    "enabled": True,
    "auto_activate": True,
    "owner_ref": OWNER,
    "reviewer_ref": "user:demo-reviewer",
    "authority_source_ref": "repo:loopx-demo/maintainers",
    "scope": {"workspace_ref": "loopx", "project_ref": "loopx-demo", "surface_ids": [SURFACE]},
    "allowed_target_classes": ["soft_preference"],
    "allowed_source_kinds": ["maintainer_feedback", "operator_choice"],
    "allowed_actor_roles": ["maintainer", "operator"],
    "allowed_action_scopes": [],
    "raw_content_captured": False,
}
BINDING = {
    "corpus_id": CORPUS_ID,
    "provider_id": "local",
    "namespace": "reward_memory",
    "scope_ref": f"local:{CORPUS_ID}",
    "timeout_seconds": 20,
}


def event_for(variant: str) -> dict:
    event = json.loads(json.dumps(EVENT))
    if variant == "unverified-actor":
        event["source"]["actor_ref"] = "user:maint-1"
    elif variant == "conflicted":
        event["guard_context"]["conflict_state"] = "unresolved"
    elif variant == "hard-policy":
        event["target_class"] = "hard_policy"
    return event


def main() -> None:
    from loopx.capabilities.reward_memory.application import (
        normalize_reward_memory_provider_binding,
    )
    from loopx.capabilities.reward_memory.ingestion import (
        normalize_reward_memory_standing_policy,
    )
    from loopx.capabilities.reward_memory.registry import normalize_reward_memory_corpus
    from loopx.capabilities.reward_memory.scoped_feedback import (
        build_scoped_feedback_reward_memory_candidate,
    )

    variant = sys.argv[1] if len(sys.argv) > 1 else "clear"
    corpus = normalize_reward_memory_corpus(demo_corpus("loopx-demo"))
    event = event_for(variant)
    build_scoped_feedback_reward_memory_candidate(event)  # LoopX's adapter takes it
    packet = {
        "adapter": "scoped_feedback",
        "event": event,
        "corpus": corpus,
        "standing_policy": normalize_reward_memory_standing_policy(POLICY),
        "provider_binding": normalize_reward_memory_provider_binding(BINDING, corpus),
        "observed_at": now(),
    }
    print(json.dumps(packet))


if __name__ == "__main__":
    main()
