"""The demo's input documents (``reward_memory.demo`` submits them through the real
services): corpus definitions, standing policies, compact events and the private
experiment config."""

PROJECT = "loopx-demo"
OWNER = "user:demo-owner"
REVIEWER = "user:demo-reviewer"
AUTHORITY = "repo:loopx-demo/maintainers"
OBSERVED = "2025-06-01T10:00:00Z"
CORPORA = [
    ("loopx-demo-turn-admission", "agent_workflow.turn_admission"),
    ("loopx-demo-pr-description", "issue_fix.pr_description"),
]
POLICY_CORPUS = "loopx-demo-review-policy"
POLICY_SURFACE = "issue_fix.patch_planning"
CHECKPOINT_ID = "demo-core-contributor"
CONTRIBUTOR = "user:demo-contributor"
POLICY_SCOPES = ["issue_fix.request_reproduction"]


def reviewer(owner: str) -> str:
    """The demo corpora's reviewer: the signed-in operator when the demo was loaded for
    one (so ``make run``'s operator can review in the admin), else ``demo-reviewer``."""
    return owner if owner != OWNER else REVIEWER


def corpus(corpus_id: str, surface: str, owner: str = OWNER) -> dict:
    return {
        "schema_version": "reward_memory_corpus_v0",
        "corpus_id": corpus_id,
        "memory_class": "soft_preference",
        "owner": owner,
        "reviewer": reviewer(owner),
        "authority_source": AUTHORITY,
        "maintenance": {"retirement_authority": owner},
        "project": PROJECT,
        "surfaces": [surface],
        "freshness": {"max_source_age_days": None, "require_current_revision": True},
        "privacy": {"visibility": "project", "retention_class": "standard"},
        "provider_binding": {"provider_id": "local", "scope_ref": f"local:{corpus_id}"},
        "agent_allowlist": [
            {"goal_id": "demo", "agent_id": "author"},
            {"goal_id": "demo", "agent_id": "reviewer"},
        ],
    }


def policy(corpus_id: str, surface: str, owner: str = OWNER) -> dict:
    return {
        "schema_version": "reward_memory_standing_policy_v0",
        "corpus_id": corpus_id,
        "owner": owner,
        "reviewer": reviewer(owner),
        "authority_source": AUTHORITY,
        "project": PROJECT,
        "surface": surface,
        "memory_class": "soft_preference",
        "allowed_source_kinds": ["maintainer_feedback", "operator_choice"],
        "verified_actor_roles": ["maintainer", "operator"],
        "action_scopes": [],
    }


def turn_event(event_id: str, summary: str, reasoning: str) -> dict:
    return {
        "schema_version": "scoped_feedback_reward_memory_event_v0",
        "event_id": event_id,
        "corpus_id": "loopx-demo-turn-admission",
        "target_class": "soft_preference",
        "source": {
            "kind": "operator_choice",
            "actor": "user:demo-operator",
            "actor_role": "operator",
            "evidence_ref": f"feedback:loopx-demo/turn-admission/{event_id}",
            "observed_at": OBSERVED,
        },
        "scope": {
            "workspace": "loopx",
            "project": PROJECT,
            "surface": "agent_workflow.turn_admission",
        },
        "content_summary": summary,
        "reasoning_summary": reasoning,
        "confidence": {"level": "medium", "basis": "repeated explicit operator choice"},
        "requested_action_scopes": [],
        "conflicts": [],
    }


def policy_event() -> dict:
    return {
        "schema_version": "scoped_feedback_reward_memory_event_v0",
        "event_id": "policy-0001",
        "corpus_id": POLICY_CORPUS,
        "target_class": "hard_policy",
        "source": {
            "kind": "maintainer_feedback",
            "actor": CONTRIBUTOR,
            "actor_role": "core_contributor",
            "evidence_ref": "feedback:loopx-demo/patch-planning/0001",
            "observed_at": OBSERVED,
        },
        "scope": {"workspace": "loopx", "project": PROJECT, "surface": POLICY_SURFACE},
        "content_summary": "Ask for a failing reproduction before patching a storage contract.",
        "reasoning_summary": "A verified core contributor corrected two storage patches.",
        "confidence": {"level": "high", "basis": "explicit core-contributor correction"},
        "requested_action_scopes": POLICY_SCOPES,
        "authority_checkpoint": {"checkpoint_ref": CHECKPOINT_ID},
        "conflicts": [],
    }


def experiment_config() -> dict:
    corpora = [*CORPORA, (POLICY_CORPUS, POLICY_SURFACE)]
    return {
        "schema_version": "reward_memory_experiment_config_v1",
        "project_provider_binding": {
            "provider_id": "local",
            "namespace": "reward_memory",
            "corpus_scopes": [
                {"corpus_id": corpus_id, "scope_ref": f"local:{corpus_id}"}
                for corpus_id, _ in corpora
            ],
        },
        "corpora": [{"corpus": {"corpus_id": c}, "standing_policy": {}} for c, _ in corpora],
        "surfaces": [
            {
                "surface_id": surface,
                "adapter": "scoped_feedback",
                "corpus_ids": [corpus_id],
                "ingest_corpus_id": corpus_id,
                "recall_profile": {
                    "profile_id": surface.split(".", 1)[1] + "_v1",
                    "mode": "function_boundary",
                    "max_queries": 1,
                    "limit": 4,
                },
            }
            for corpus_id, surface in corpora
        ],
    }
