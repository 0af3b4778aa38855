"""Demo data: two soft_preference corpora of project ``loopx-demo`` (one for
``agent_workflow.turn_admission``, one for ``issue_fix.pr_description``), each with a
standing policy, and a few active records written through the real pipelines (ingest
via the standing policy; review → apply by the corpus owner) on the ``local`` provider.

Authority: the corpus owner and retirement authority is the operator account ``make
run`` signs in with (``loopx_demo --operator NAME``; ``demo-owner`` when loaded without
one), holding the Reward Memory operator permissions, so retire / revoke / supersede and
operator control work in the admin as that account; the reviewer is ``demo-reviewer``
(staff, no usable password — sign in as it only after setting one). Operator-granted
``AuthorityCheckpoint``s: ``demo-core-contributor`` authorises one ``hard_policy`` of the
``loopx-demo-review-policy`` corpus, ingested under its standing policy, and
``demo-operator-control`` binds the owner to the edit / retire operator controls of the
three demo corpora. Idempotent: only what is missing is created (an existing demo keeps
its corpus owner)."""

import copy
import json

from django.contrib.auth import get_user_model

from reward_memory import principals, services
from reward_memory.inputs import FIXTURES
from reward_memory.models import AuthorityCheckpoint, Corpus, Review

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


def _corpus(corpus_id: str, surface: str, owner: str = OWNER) -> dict:
    return {
        "schema_version": "reward_memory_corpus_v0",
        "corpus_id": corpus_id,
        "memory_class": "soft_preference",
        "owner": owner,
        "reviewer": REVIEWER,
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


def _policy(corpus_id: str, surface: str, owner: str = OWNER) -> dict:
    return {
        "schema_version": "reward_memory_standing_policy_v0",
        "corpus_id": corpus_id,
        "owner": owner,
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


POLICY_CORPUS = "loopx-demo-review-policy"
POLICY_SURFACE = "issue_fix.patch_planning"
CHECKPOINT_ID = "demo-core-contributor"
CONTRIBUTOR = "user:demo-contributor"
POLICY_SCOPES = ["issue_fix.request_reproduction"]


def _owner(operator: str | None) -> str:
    """The demo corpora's owner: the stored one when the demo exists (never changed),
    else the signed-in operator account, else ``demo-owner``."""
    stored = (
        Corpus.objects.filter(corpus_id__in=[c for c, _ in CORPORA] + [POLICY_CORPUS])
        .order_by("pk")
        .values_list("owner", flat=True)
        .first()
    )
    return stored or (f"user:{operator}" if operator else OWNER)


def _operator_accounts(owner: str) -> None:
    """The demo's corpus owner and reviewer are operator accounts (created if missing);
    the owner holds the Reward Memory operator permissions (only added, never removed)."""
    users = get_user_model()
    for name in {principals.username_of(owner), principals.username_of(REVIEWER)}:
        user, created = users.objects.get_or_create(
            username=name, defaults={"is_staff": True, "is_active": True}
        )
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
        if name == principals.username_of(owner) and not user.is_superuser:
            principals.grant_operator_permissions(user)


def _hard_policy_corpus(owner: str) -> None:
    """A hard_policy corpus (its policy comes from ``_hard_policy``: the operator
    checkpoint that authorises it and the event ingested under the standing policy)."""
    corpus = _corpus(POLICY_CORPUS, POLICY_SURFACE, owner)
    corpus["memory_class"] = "hard_policy"
    policy = _policy(POLICY_CORPUS, POLICY_SURFACE, owner)
    policy.update(
        memory_class="hard_policy",
        allowed_source_kinds=["maintainer_feedback"],
        verified_actor_roles=["core_contributor"],
        action_scopes=POLICY_SCOPES,
    )
    services.register_corpus(corpus=corpus, standing_policies=[policy], execute=True)


def _hard_policy(owner: str) -> dict:
    services.grant_checkpoint(
        checkpoint_id=CHECKPOINT_ID,
        project=PROJECT,
        actor=CONTRIBUTOR,
        role="core_contributor",
        action_scopes=POLICY_SCOPES,
        operator=principals.operator_account(owner, field="actor"),
        evidence_ref="roles:loopx-demo/core-contributors",
        execute=True,
    )
    event = {
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
    return services.ingest_event(event=event, goal_id="demo", agent_id="author", execute=True)


def _fixture_checkpoint(owner: str) -> None:
    """The operator verification the shipped ``issue-fix-verified-contributor`` case
    names, so ``candidate-review`` with the default case shows an authorised policy."""
    services.grant_checkpoint(
        checkpoint_id="example-repo-core-contributors",
        project="example-org/example-repo",
        actor="contributor:maintainer-a",
        role="core_contributor",
        action_scopes=["issue_fix.request_reproduction", "issue_fix.request_changes"],
        operator=principals.operator_account(owner, field="actor"),
        execute=True,
    )


CONTROL_CHECKPOINT_ID = "demo-operator-control"


def _operator_control_checkpoint(owner: str) -> str:
    """The checkpoint the admin's operator-control actions name (Checkpoint id
    ``demo-operator-control``): it binds the corpus owner (= retirement authority) to the
    edit and retire controls of the three demo corpora. Granted if missing."""
    if AuthorityCheckpoint.objects.filter(checkpoint_id=CONTROL_CHECKPOINT_ID).exists():
        return "exists"
    corpora = [c for c, _ in CORPORA] + [POLICY_CORPUS]
    services.grant_checkpoint(
        checkpoint_id=CONTROL_CHECKPOINT_ID,
        project=PROJECT,
        actor=owner,
        role="corpus_owner",
        action_scopes=[f"reward_memory.{a}.{c}" for c in corpora for a in ("edit", "retire")],
        operator=principals.operator_account(owner, field="actor"),
        evidence_ref="roles:loopx-demo/corpus-owner",
        execute=True,
    )
    return "granted"


EXPERIMENT_CONFIG = ".local/reward-memory/demo-experiment.json"


def _experiment_config() -> dict:
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


def _experiment() -> str:
    """Enable the experiment for demo/author through ``configure_goal`` (its canary and
    readback on the local provider) unless it is already available; the private config
    is written under the git-ignored ``.local/`` of the config root."""
    from reward_memory import experiment_config, selectors

    path = experiment_config.config_root() / EXPERIMENT_CONFIG
    data = (json.dumps(_experiment_config(), indent=2) + "\n").encode("utf-8")
    if not path.exists() or path.read_bytes() != data:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    if selectors.experiment_route("demo", "author").available:
        return "available"
    result = services.configure_goal(
        goal_id="demo", agent_id="author", config_path=EXPERIMENT_CONFIG, execute=True
    )
    return result["status"]


def load(*, log, operator: str | None = None) -> dict:
    owner = _owner(operator)
    _operator_accounts(owner)
    _fixture_checkpoint(owner)
    for corpus_id, surface in CORPORA:
        result = services.register_corpus(
            corpus=_corpus(corpus_id, surface, owner),
            standing_policies=[_policy(corpus_id, surface, owner)],
            execute=True,
        )
        log(f"reward_memory corpus {corpus_id}: {result['status']}")

    _hard_policy_corpus(owner)
    control = _operator_control_checkpoint(owner)
    log(f"reward_memory checkpoint {CONTROL_CHECKPOINT_ID} (owner {owner}): {control}")
    log(f"reward_memory experiment demo/author: {_experiment()}")

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
        principal=principals.operator_account(REVIEWER, field="reviewer"),
        corpus_id="loopx-demo-pr-description",
        execute=True,
    )
    applied = services.apply_review(
        review_id=review["review_id"],
        principal=principals.operator_account(owner, field="actor"),
        execute=True,
    )
    policy = _hard_policy(owner)
    # A rerun returns the stored receipts: say so rather than "activated" again.
    statuses = ["exists" if r.get("deduplicated") else r["status"] for r in receipts]
    statuses.append("exists" if prior and applied["status"] == "activated" else applied["status"])
    statuses.append("exists" if policy.get("deduplicated") else policy["status"])
    log(f"reward_memory records: {', '.join(statuses)}")
    log(f"reward_memory checkpoint {CHECKPOINT_ID} authorises hard_policy: {statuses[-1]}")
    return {
        "corpora": [c for c, _ in CORPORA] + [POLICY_CORPUS],
        "ingest_statuses": statuses[:-2],
        "review_applied": statuses[-2],
        "hard_policy": {"checkpoint_id": CHECKPOINT_ID, "status": statuses[-1]},
        "owner": owner,
        "operator_control": {"checkpoint_id": CONTROL_CHECKPOINT_ID, "status": control},
    }
