"""Demo data: two soft_preference corpora of project ``loopx-demo`` (one for
``agent_workflow.turn_admission``, one for ``issue_fix.pr_description``), each with a
standing policy, and a few active records written through the real pipelines (ingest
via the standing policy; review → apply by the corpus owner) on the ``local`` provider.
Idempotent: a second run changes nothing."""

import copy
import json

from reward_memory import services
from reward_memory.inputs import FIXTURES
from reward_memory.models import Review

PROJECT = "loopx-demo"
OWNER = "user:demo-owner"
REVIEWER = "user:demo-reviewer"
AUTHORITY = "repo:loopx-demo/maintainers"
OBSERVED = "2025-06-01T10:00:00Z"

CORPORA = [
    ("loopx-demo-turn-admission", "agent_workflow.turn_admission"),
    ("loopx-demo-pr-description", "issue_fix.pr_description"),
]

TURN_EVENTS = [
    (
        "turn-0001",
        "Before starting a new Todo, re-read its acceptance criteria and the last validation "
        "result instead of relying on the previous turn summary.",
        "The operator corrected two turns that resumed from a stale summary.",
    ),
    (
        "turn-0002",
        "Prefer finishing an in-progress Todo over opening a new one when the quota leaves "
        "room for a single turn.",
        "Repeated operator choice when a turn had to pick between two Todos.",
    ),
]


def _corpus(corpus_id: str, surface: str) -> dict:
    return {
        "schema_version": "reward_memory_corpus_v0",
        "corpus_id": corpus_id,
        "memory_class": "soft_preference",
        "owner": OWNER,
        "reviewer": REVIEWER,
        "authority_source": AUTHORITY,
        "maintenance": {"retirement_authority": OWNER},
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


def _policy(corpus_id: str, surface: str) -> dict:
    return {
        "schema_version": "reward_memory_standing_policy_v0",
        "corpus_id": corpus_id,
        "owner": OWNER,
        "reviewer": REVIEWER,
        "authority_source": AUTHORITY,
        "project": PROJECT,
        "surface": surface,
        "memory_class": "soft_preference",
        "allowed_source_kinds": ["maintainer_feedback", "operator_choice"],
        "verified_actor_roles": ["maintainer", "operator"],
        "action_scopes": [],
    }


def _turn_event(event_id: str, summary: str, reasoning: str) -> dict:
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


def load(*, log) -> dict:
    for corpus_id, surface in CORPORA:
        result = services.register_corpus(
            corpus=_corpus(corpus_id, surface),
            standing_policies=[_policy(corpus_id, surface)],
            execute=True,
        )
        log(f"reward_memory corpus {corpus_id}: {result['status']}")

    receipts = []
    for event_id, summary, reasoning in TURN_EVENTS:
        receipts.append(
            services.ingest_event(
                event=_turn_event(event_id, summary, reasoning),
                goal_id="demo",
                agent_id="author",
                execute=True,
            )
        )
    with open(FIXTURES / "scoped_feedback_event.json", encoding="utf-8") as handle:
        pr_event = json.load(handle)
    receipts.append(
        services.ingest_event(event=pr_event, goal_id="demo", agent_id="author", execute=True)
    )

    reviewed = copy.deepcopy(pr_event)
    for key in ("event_id", "corpus_id"):
        reviewed.pop(key)
    reviewed["schema_version"] = "reward_memory_candidate_v0"
    reviewed["source"]["evidence_ref"] = "feedback:loopx-demo/pr-description/0002"
    reviewed["content_summary"] = (
        "Keep PR descriptions under twenty lines; link follow-up work instead of describing it."
    )
    reviewed["reasoning_summary"] = "A reviewer asked for shorter descriptions on three PRs."
    prior = Review.objects.filter(
        corpus__corpus_id="loopx-demo-pr-description", applied_at__isnull=False
    ).exists()
    review = services.review_candidate(
        candidate=reviewed,
        decision="accept",
        reviewer=REVIEWER,
        corpus_id="loopx-demo-pr-description",
        execute=True,
    )
    applied = services.apply_review(review_id=review["review_id"], actor=OWNER, execute=True)
    # A rerun returns the stored receipts: say so rather than "activated" again.
    statuses = ["exists" if r.get("deduplicated") else r["status"] for r in receipts]
    statuses.append("exists" if prior and applied["status"] == "activated" else applied["status"])
    log(f"reward_memory records: {', '.join(statuses)}")
    return {
        "corpora": [c for c, _ in CORPORA],
        "ingest_statuses": statuses[:-1],
        "review_applied": statuses[-1],
    }
