"""Demo data: two soft_preference corpora of project ``loopx-demo`` (one for
``agent_workflow.turn_admission``, one for ``issue_fix.pr_description``), each with a
standing policy, and a few active records written through the real pipelines (ingest
via the standing policy; review → apply by the corpus owner) on the ``local`` provider,
plus one host candidate left undecided for the reviewer (the review to-do's first row).

Authority: the corpus owner and retirement authority is the operator account ``make
run`` signs in with (``loopx_demo --operator NAME``; ``demo-owner`` when loaded without
one), holding the Reward Memory operator permissions, so retire / revoke / supersede and
operator control work in the admin as that account; the reviewer is ``demo-reviewer``
(staff, no usable password — sign in as it only after setting one). Operator-granted
``AuthorityCheckpoint``s: ``demo-core-contributor`` authorises one ``hard_policy`` of the
``loopx-demo-review-policy`` corpus, ingested under its standing policy;
``demo-operator-control`` binds the owner to the edit / retire operator controls of the
three demo corpora; the advisory events' source actors hold their roles through
operator-granted role checkpoints (``ROLE_CHECKPOINTS``, no action scope).

Create-only (``loopx_site.core.demo_kit``): every account, checkpoint, corpus, experiment
config and binding, ingested event, candidate and review that exists is kept as the
operator left it — a revoked checkpoint or record, a retired corpus, a disabled
experiment, an edited private config, a decided candidate, the corpus owner stay so;
only what is missing is created."""

import copy
import json

from django.contrib.auth import get_user_model

from loopx_site.core.demo_kit import Ledger
from reward_memory import experiment_config, principals, services
from reward_memory.documents import demo as demo_documents
from reward_memory.documents import review as review_documents
from reward_memory.documents.demo import (
    CHECKPOINT_ID,
    CONTRIBUTOR,
    CORPORA,
    OWNER,
    POLICY_CORPUS,
    POLICY_SCOPES,
    POLICY_SURFACE,
    PROJECT,
)
from reward_memory.domain.inputs import FIXTURES
from reward_memory.models import (
    HYBRID,
    AuthorityCheckpoint,
    Candidate,
    Corpus,
    ExperimentBinding,
    IngestEvent,
    Review,
)
from reward_memory.services import routes
from reward_memory.services.ranking import set_corpus_ranking

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


def _operator_accounts(ledger: Ledger, owner: str, operator: str | None) -> None:
    """The demo's corpus owner and reviewer are operator accounts (created if missing);
    the owner holds the Reward Memory operator permissions (only added, never removed).
    The signed-in ``operator``'s own account is the command's, not this loader's."""
    users = get_user_model()
    names = (principals.username_of(owner), principals.username_of(demo_documents.reviewer(owner)))
    for name in dict.fromkeys(names):
        user, created = users.objects.get_or_create(
            username=name, defaults={"is_staff": True, "is_active": True}
        )
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
        if name == principals.username_of(owner) and not user.is_superuser:
            principals.grant_operator_permissions(user)
        if name != operator:
            ledger.record(f"account {name}", created=created)


def _hard_policy_corpus(owner: str):
    """A hard_policy corpus (its policy comes from ``_hard_policy``: the operator
    checkpoint that authorises it and the event ingested under the standing policy)."""
    corpus = demo_documents.corpus(POLICY_CORPUS, POLICY_SURFACE, owner)
    corpus["memory_class"] = "hard_policy"
    policy = demo_documents.policy(POLICY_CORPUS, POLICY_SURFACE, owner)
    policy.update(
        memory_class="hard_policy",
        allowed_source_kinds=["maintainer_feedback"],
        verified_actor_roles=["core_contributor"],
        action_scopes=POLICY_SCOPES,
    )
    return services.register_corpus(corpus=corpus, standing_policies=[policy], execute=True)


def _policy_checkpoint(owner: str):
    return services.grant_checkpoint(
        checkpoint_id=CHECKPOINT_ID,
        project=PROJECT,
        actor=CONTRIBUTOR,
        role="core_contributor",
        action_scopes=POLICY_SCOPES,
        operator=principals.operator_account(owner, field="actor"),
        evidence_ref="roles:loopx-demo/core-contributors",
        execute=True,
    )


#: Operator-granted role bindings (checkpoints without action scope) of the actors the
#: demo's advisory events name: a source actor/role counts only through such a record.
ROLE_CHECKPOINTS = [
    ("demo-operator-role", "user:demo-operator", "operator"),
    ("demo-maintainer-role", "user:demo-maintainer", "maintainer"),
]


def _role_checkpoint(checkpoint_id: str, actor: str, role: str, owner: str):
    return services.grant_checkpoint(
        checkpoint_id=checkpoint_id,
        project=PROJECT,
        actor=actor,
        role=role,
        action_scopes=[],
        operator=principals.operator_account(owner, field="actor"),
        evidence_ref=f"roles:loopx-demo/{role}",
        execute=True,
    )


#: LoopX's fixture authority map (its ``candidate-review`` fixture's checkpoint facts).
FIXTURE_CHECKPOINT_ID = "repository:authority-map"


def _fixture_checkpoint(owner: str) -> None:
    """The operator verification the shipped ``issue-fix-verified-contributor`` case
    names, so ``candidate-review`` with the default case shows an authorised policy."""
    return services.grant_checkpoint(
        checkpoint_id=FIXTURE_CHECKPOINT_ID,
        project="repository:example",
        actor="github:user:maintainer",
        role="verified_repository_core_contributor",
        action_scopes=["issue_fix:scope_selection"],
        operator=principals.operator_account(owner, field="actor"),
        execute=True,
    )


CONTROL_CHECKPOINT_ID = "demo-operator-control"


def _operator_control_checkpoint(owner: str):
    """The checkpoint the admin's operator-control actions name (Checkpoint id
    ``demo-operator-control``): it binds the corpus owner (= retirement authority) to the
    edit and retire controls of the three demo corpora."""
    corpora = [c for c, _ in CORPORA] + [POLICY_CORPUS]
    return services.grant_checkpoint(
        checkpoint_id=CONTROL_CHECKPOINT_ID,
        project=PROJECT,
        actor=owner,
        role="corpus_owner",
        action_scopes=[f"reward_memory.{a}.{c}" for c in corpora for a in ("edit", "retire")],
        operator=principals.operator_account(owner, field="actor"),
        evidence_ref="roles:loopx-demo/corpus-owner",
        execute=True,
    )


EXPERIMENT_CONFIG = ".local/reward-memory/demo-experiment.json"


def _experiment(ledger: Ledger) -> str:
    """Enable the experiment for demo/author through ``configure_goal`` (its canary and
    readback on the local provider) when the Goal has no experiment binding yet; the
    private config is written under the git-ignored ``.local/`` of the config root when
    missing. An existing binding (enabled or disabled) and config file are kept."""
    path = experiment_config.config_root() / EXPERIMENT_CONFIG

    def write_config() -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(
            (json.dumps(demo_documents.experiment_config(), indent=2) + "\n").encode("utf-8")
        )

    ledger.ensure("experiment config", exists=path.exists, create=write_config)
    ledger.ensure(
        "experiment demo/author",
        exists=ExperimentBinding.objects.filter(
            goal__goal_id="demo", agent__agent_id="author"
        ).exists,
        create=lambda: services.configure_goal(
            goal_id="demo", agent_id="author", config_path=EXPERIMENT_CONFIG, execute=True
        ),
    )
    return routes.experiment_route("demo", "author").status


def _ingested(event: dict) -> bool:
    return IngestEvent.objects.filter(
        goal__goal_id="demo",
        agent__agent_id="author",
        corpus__corpus_id=event["corpus_id"],
        event__event_id=event["event_id"],
    ).exists()


def _ingest(ledger: Ledger, event: dict) -> str:
    """Ingest ``event`` once; the status the ingest answered, or ``kept``."""
    receipt = ledger.ensure(
        f"event {event['event_id']}",
        exists=lambda: _ingested(event),
        create=lambda: services.ingest_event(
            event=event, goal_id="demo", agent_id="author", execute=True
        ),
    )
    return receipt.status if receipt is not None else "kept"


#: the first turn lesson, proposed again by a later turn (standing-policy ingest)
TURN_RESTATEMENT = (
    "turn-0001-again",
    "Before starting a new Todo, re-read its acceptance criteria and the last validation "
    "result instead of relying on the previous turn's summary!",
    "The operator corrected a third turn that resumed from a stale summary.",
)


def _ingested_duplicate(ledger: Ledger) -> str:
    """A later turn proposes the first turn's lesson again: no second active record —
    the event is marked ``duplicate_of`` the record and its evidence joins it."""
    receipt = ledger.ensure(
        f"event {TURN_RESTATEMENT[0]}",
        exists=lambda: _ingested(demo_documents.turn_event(*TURN_RESTATEMENT)),
        create=lambda: services.ingest_event(
            event=demo_documents.turn_event(*TURN_RESTATEMENT),
            goal_id="demo",
            agent_id="author",
            execute=True,
        ),
    )
    if receipt is None:
        return "kept"
    return "evidence_added" if receipt.duplicate_of else receipt.status


def _checkpoint(ledger: Ledger, checkpoint_id: str, grant) -> None:
    ledger.ensure(
        f"checkpoint {checkpoint_id}",
        exists=AuthorityCheckpoint.objects.filter(checkpoint_id=checkpoint_id).exists,
        create=grant,
    )


def _register(ledger: Ledger, corpus_id: str, register) -> str:
    result = ledger.ensure(
        f"corpus {corpus_id}",
        exists=Corpus.objects.filter(corpus_id=corpus_id).exists,
        create=register,
    )
    return result.status if result is not None else "kept"


def _reviewed_candidate(pr_event: dict) -> dict:
    """The PR-description candidate the demo's reviewer accepts (from the shipped event)."""
    reviewed = copy.deepcopy(pr_event)
    for key in ("event_id", "corpus_id"):
        reviewed.pop(key)
    reviewed["schema_version"] = "reward_memory_candidate_v0"
    reviewed["source"]["evidence_ref"] = "feedback:loopx-demo/pr-description/0002"
    reviewed["content_summary"] = (
        "Keep PR descriptions under twenty lines; link follow-up work instead of describing it."
    )
    reviewed["reasoning_summary"] = "A reviewer asked for shorter descriptions on three PRs."
    return reviewed


def _review(ledger: Ledger, pr_event: dict, owner: str) -> str:
    """The reviewer accepts one candidate and the owner applies it, once."""
    reviewed = _reviewed_candidate(pr_event)

    def review_and_apply() -> dict:
        review = services.review_candidate(
            candidate=reviewed,
            decision="accept",
            principal=principals.operator_account(demo_documents.reviewer(owner), field="reviewer"),
            corpus_id="loopx-demo-pr-description",
            execute=True,
        )
        step = services.apply_review(
            review_id=review.review_id,
            principal=principals.operator_account(owner, field="actor"),
            execute=True,
        )
        return review_documents.review_step(step)

    applied = ledger.ensure(
        "review loopx-demo-pr-description",
        exists=Review.objects.filter(corpus__corpus_id="loopx-demo-pr-description").exists,
        create=review_and_apply,
    )
    return applied["status"] if applied is not None else "kept"


#: the reviewed PR-description candidate, said again by another reviewer comment
RESTATEMENT = (
    "Keep PR descriptions under twenty lines, and link follow-up work instead of describing it."
)


def _duplicate(ledger: Ledger, pr_event: dict, owner: str) -> str:
    """A restatement of the reviewed record, reviewed once: review marks it
    ``duplicate_of`` that record, and accepting it adds its evidence to the record's
    lineage (Admin → Records → evidence) instead of a second active record."""
    restated = _reviewed_candidate(pr_event)
    restated["source"]["evidence_ref"] = "feedback:loopx-demo/pr-description/0003"
    restated["content_summary"] = RESTATEMENT
    corpus_id = "loopx-demo-pr-description"

    def review_and_apply() -> dict:
        review = services.review_candidate(
            candidate=restated,
            decision="accept",
            principal=principals.operator_account(demo_documents.reviewer(owner), field="reviewer"),
            corpus_id=corpus_id,
            execute=True,
        )
        if review.duplicate_of is None:
            return {"status": "not_marked"}
        step = services.apply_review(
            review_id=review.review_id,
            principal=principals.operator_account(owner, field="actor"),
            execute=True,
        )
        return review_documents.review_step(step)

    applied = ledger.ensure(
        f"duplicate review {corpus_id}",
        exists=Candidate.objects.filter(corpus__corpus_id=corpus_id)
        .exclude(duplicate_of="")
        .exists,
        create=review_and_apply,
    )
    return applied["status"] if applied is not None else "kept"


#: a host's PR-description candidate nobody has decided yet: the review to-do's first row
AWAITING_SUMMARY = (
    "Under How to verify, list the commands a reviewer runs, not only what they check."
)


def _awaiting_candidate(ledger: Ledger, pr_event: dict, owner: str) -> str:
    """A candidate from a host, recorded undecided (``no_write``, as a host bound to the
    reviewer role leaves it), so the admin's "Waits for a human" is not empty: the
    reviewer accepts, rejects or confirms it from Candidates. Created once; decided or
    not, the candidate stays as the operator left it."""
    waiting = _reviewed_candidate(pr_event)
    waiting["source"]["evidence_ref"] = "feedback:loopx-demo/pr-description/0004"
    waiting["content_summary"] = AWAITING_SUMMARY
    waiting["reasoning_summary"] = "A host proposed it after two PRs lacked runnable checks."
    corpus_id = "loopx-demo-pr-description"
    recorded = ledger.ensure(
        f"awaiting candidate {corpus_id}",
        exists=Candidate.objects.filter(
            corpus__corpus_id=corpus_id, document__content_summary=AWAITING_SUMMARY
        ).exists,
        create=lambda: services.review_candidate(
            candidate=waiting,
            decision="no_write",
            principal=principals.operator_account(demo_documents.reviewer(owner), field="reviewer"),
            corpus_id=corpus_id,
            execute=True,
        ),
    )
    return "awaiting the reviewer" if recorded is not None else "kept"


#: asked of the hybrid PR-description corpus: nothing in it is about bread
UNRELATED_QUERY = "how long to bake sourdough bread"


def _hybrid(ledger: Ledger, owner: str) -> str:
    """The PR-description corpus ranks hybrid (set once, when the demo created it) and
    answers an unrelated question with nothing (``nothing_relevant``), not filler."""
    corpus_id, surface = CORPORA[1]
    if ledger.created(f"corpus {corpus_id}"):
        set_corpus_ranking(
            corpus_id=corpus_id,
            ranking=HYBRID,
            principal=principals.operator_account(owner, field="owner"),
            execute=True,
        )
    got = services.recall_guidance(
        goal_id="demo", agent_id="author", corpus_id=corpus_id, surface=surface,
        query=UNRELATED_QUERY,
    )  # fmt: skip
    why = "nothing_relevant" if got.nothing_relevant else "-"
    return f"{corpus_id} asked {UNRELATED_QUERY!r}: {got.status} ({why})"


def load(*, log, operator: str | None = None) -> dict:
    ledger = Ledger()
    owner = _owner(operator)
    _operator_accounts(ledger, owner, operator)
    _checkpoint(ledger, FIXTURE_CHECKPOINT_ID, lambda: _fixture_checkpoint(owner))
    for checkpoint_id, actor, role in ROLE_CHECKPOINTS:
        _checkpoint(
            ledger,
            checkpoint_id,
            lambda c=checkpoint_id, a=actor, r=role: _role_checkpoint(c, a, r, owner),
        )
    for corpus_id, surface in CORPORA:
        status = _register(
            ledger,
            corpus_id,
            lambda corpus_id=corpus_id, surface=surface: services.register_corpus(
                corpus=demo_documents.corpus(corpus_id, surface, owner),
                standing_policies=[demo_documents.policy(corpus_id, surface, owner)],
                execute=True,
            ),
        )
        log(f"reward_memory corpus {corpus_id}: {status}")
    _register(ledger, POLICY_CORPUS, lambda: _hard_policy_corpus(owner))
    _checkpoint(ledger, CONTROL_CHECKPOINT_ID, lambda: _operator_control_checkpoint(owner))
    log(f"reward_memory checkpoint {CONTROL_CHECKPOINT_ID} (owner {owner})")
    log(f"reward_memory experiment demo/author: {_experiment(ledger)}")

    statuses = [
        _ingest(ledger, demo_documents.turn_event(event_id, summary, reasoning))
        for event_id, summary, reasoning in TURN_EVENTS
    ]
    log(f"reward_memory ingested duplicate: {_ingested_duplicate(ledger)}")
    with open(FIXTURES / "scoped_feedback_event.json", encoding="utf-8") as handle:
        pr_event = json.load(handle)
    statuses.append(_ingest(ledger, pr_event))
    review_status = _review(ledger, pr_event, owner)
    log(f"reward_memory duplicate candidate: {_duplicate(ledger, pr_event, owner)}")
    log(f"reward_memory host candidate: {_awaiting_candidate(ledger, pr_event, owner)}")
    _checkpoint(ledger, CHECKPOINT_ID, lambda: _policy_checkpoint(owner))
    policy_status = _ingest(ledger, demo_documents.policy_event())
    log(f"reward_memory records: {', '.join([*statuses, review_status, policy_status])}")
    log(f"reward_memory checkpoint {CHECKPOINT_ID} authorises hard_policy: {policy_status}")
    log(f"reward_memory hybrid ranking: {_hybrid(ledger, owner)}")
    log(f"reward_memory demo: {ledger.summary()}")
    return ledger.document(
        corpora=[c for c, _ in CORPORA] + [POLICY_CORPUS],
        ingest_statuses=statuses,
        review_applied=review_status,
        hard_policy={"checkpoint_id": CHECKPOINT_ID, "status": policy_status},
        owner=owner,
        operator_control={
            "checkpoint_id": CONTROL_CHECKPOINT_ID,
            "status": ledger.objects.get(f"checkpoint {CONTROL_CHECKPOINT_ID}"),
        },
    )
