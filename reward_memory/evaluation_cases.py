"""The eight cases of the Stage 4 release gate (``reward_memory.evaluation`` runs them).

Each case runs the real candidate, ingest, recall, review, application, lifecycle and
route code inside the rolled-back sandbox (``evaluation_fixtures``) against the provider
double, asserts through a ``Check`` and leaves its public evidence there. The cases
check the services' results — a recall's records and reasons, a review's effective
decision and guard, an application's verdict, a route's decision — not the documents
rendered from them. The one document they render is the record envelope whose size the
restart case reports (what a host reads back after a restart). This module is the gate's
harness, as ``evaluation_fixtures`` holds its inputs: no caller reaches a service
through it.
"""

from collections.abc import Callable
from typing import Any

from loopx_site.core import clock
from loopx_site.core.encoding import dumps
from reward_memory import contracts as c
from reward_memory import evaluation_fixtures as fx
from reward_memory import principals, providers, routing, selectors, services
from reward_memory.documents import registry
from reward_memory.domain import candidates, guards
from reward_memory.models import Corpus
from reward_memory.providers.double import ProviderDouble
from reward_memory.services import activation, roles
from reward_memory.services.ingest import IngestEvaluation, activation_plan, ingest_event
from reward_memory.services.recalls import ApplicationOutcome, RecallOutcome

# the shared application core the ranking case runs (LoopX names its own module)
SHARED_CORE = "reward_memory.services.record_application"


class Check:
    """Collects assertions and evidence of one case; ``provider_writes`` counts writes
    made by the checked steps (setup writes are not counted)."""

    def __init__(self, double):
        self.double = double
        self.assertions: list[bool] = []
        self.evidence: dict[str, Any] = {}
        self.provider_writes = 0
        self.false_applications = 0

    def that(self, condition: bool) -> None:
        self.assertions.append(bool(condition))

    @property
    def passed(self) -> bool:
        return bool(self.assertions) and all(self.assertions)

    def checked(self, fn, *args, **kwargs):
        before = self.double.calls.count("write")
        try:
            return fn(*args, **kwargs)
        finally:
            self.provider_writes += self.double.calls.count("write") - before


def setup() -> dict[str, Any]:
    """The two corpora (advice under a standing policy, policy with action scopes) and
    the checkpoints every case starts from; the corpus rows by id."""
    fx.identities()
    operator = principals.operator_account(fx.OWNER, field="actor")
    rows = {}
    for corpus_id, memory_class, surface, scopes in (
        (fx.ADVICE_CORPUS, "soft_preference", fx.SURFACE, ()),
        (fx.POLICY_CORPUS, "hard_policy", fx.POLICY_SURFACE, fx.SCOPES),
    ):
        services.register_corpus(
            corpus=fx.corpus(corpus_id, memory_class=memory_class, surface=surface),
            standing_policies=[
                fx.standing_policy(
                    corpus_id, memory_class=memory_class, surface=surface, scopes=scopes
                )
            ],
            execute=True,
        )
    for row in Corpus.objects.filter(corpus_id__in=[fx.ADVICE_CORPUS, fx.POLICY_CORPUS]):
        rows[row.corpus_id] = row
    services.grant_checkpoint(  # the advice events' maintainer: a role binding only
        checkpoint_id=fx.ROLE_CHECKPOINT,
        project=fx.PROJECT,
        actor=fx.ACTOR,
        role="maintainer",
        action_scopes=[],
        operator=operator,
        execute=True,
    )
    services.grant_checkpoint(
        checkpoint_id=fx.CHECKPOINT,
        project=fx.PROJECT,
        actor=fx.ACTOR,
        role="core_contributor",
        action_scopes=fx.SCOPES,
        operator=operator,
        execute=True,
    )
    return rows


# -- the eight cases ------------------------------------------------------------------------
def _activate(event) -> dict[str, Any]:
    """Setup: activate one advice record (standing policy → provider → exact readback)."""
    corpus = selectors.get_corpus(event["corpus_id"])
    bindings = roles.source_role_bindings(corpus)
    adapted = candidates.adapt_and_evaluate(
        event,
        now=clock.now(),
        corpus=selectors.corpus_binding(corpus),
        checkpoints=selectors.checkpoint_lookup(),
        roles=bindings,
    )
    policy = selectors.active_policy(corpus, event["scope"]["surface"])
    judged = IngestEvaluation.of(adapted, corpus, policy, fx.GOAL, fx.AGENT, roles=bindings)
    outcome = activation.sync_and_verify(activation_plan(judged, clock.now()))
    return {"status": outcome.status, "record_ref": outcome.record.record_ref}


def _recall(corpus, query, **overrides) -> RecallOutcome:
    """One executed recall, as decided (the cases check the result, not its document)."""
    return services.recall(request=fx.recall_request(corpus, query, **overrides), execute=True)


def _refs(recalled: RecallOutcome) -> list[str]:
    """The records a recall returned, in its order."""
    return [record.record_ref for record in recalled.records]


def _loopx_status(recalled: RecallOutcome) -> str:
    """The recall status in LoopX's word (``completed`` for ours ``ok``)."""
    return c.LOOPX_RECALL_STATUS.get(recalled.status, recalled.status)


def _codes(reasons) -> list[str]:
    """The guards' reason codes, normalised as every guard payload lists them."""
    return [reason.code for reason in guards.normalise(reasons)]


def case_compact_restart_survival(check: Check, rows) -> None:
    """The one case that renders: its evidence is the size of the record's envelope, the
    document a host reads back after a restart."""
    record = _activate(fx.event("restart-1", "Lead summaries with the user-visible effect."))
    envelope = registry.record_envelope(selectors.get_record(record["record_ref"]))
    restarted = ProviderDouble()  # a new process: only the provider's storage survives
    restarted.documents = dict(check.double.documents)
    with providers.use("double", restarted):
        result = _recall(rows[fx.ADVICE_CORPUS], "summaries user-visible effect")
    readback = _refs(result) == [record["record_ref"]]
    check.that(
        record["status"] == "activated" and envelope["schema_version"] == c.ACTIVE_RECORD_SCHEMA
    )
    check.that(_loopx_status(result) == "completed")
    check.that(readback)
    check.that(result.calls == 1)
    check.evidence = {
        "serialized_bytes": len(dumps(envelope).encode("utf-8")),
        "recall_status": _loopx_status(result),
        "readback_verified": readback,
    }


def case_project_module_scope_isolation(check: Check, rows) -> None:
    _activate(fx.event("scope-1", "Keep summaries short."))
    corpus = rows[fx.ADVICE_CORPUS]
    before = check.double.call_count
    project = check.checked(
        _recall, corpus, "summaries short", project=fx.OTHER_PROJECT,
        read_authority={"project": fx.OTHER_PROJECT},
    )  # fmt: skip
    surface = check.checked(
        _recall, corpus, "summaries short", surface="eval_module.other",
        read_authority={"surface": "eval_module.other"},
    )  # fmt: skip
    calls = check.double.call_count - before
    check.that(project.status == "guard_blocked")
    check.that("project_mismatch" in _codes(project.reasons))
    check.that(surface.status == "guard_blocked")
    check.that("surface_mismatch" in _codes(surface.reasons))
    check.that(calls == 0)
    check.false_applications += len(project.records) + len(surface.records)
    check.evidence = {
        "project_status": project.status,
        "surface_status": surface.status,
        "provider_call_count": calls,
        "false_application_observed": calls > 0,
    }


def case_supersede_revoke_rejection(check: Check, rows) -> None:
    old = _activate(fx.event("life-1", "Summaries list risks first."))
    new = _activate(fx.event("life-2", "Summaries list risks and open questions first."))
    owner = principals.operator_account(fx.OWNER, field="actor")
    services.supersede_record(
        record_ref=old["record_ref"], by_record_ref=new["record_ref"], principal=owner
    )
    services.revoke_record(
        record_ref=new["record_ref"], principal=owner, revocation_ref="revocation:eval/1"
    )
    result = check.checked(_recall, rows[fx.ADVICE_CORPUS], "summaries risks questions")
    refs = set(_refs(result))
    check.that(_loopx_status(result) == "empty")
    check.that(not refs)
    check.that(not refs & {old["record_ref"], new["record_ref"]})  # nothing read back
    check.false_applications += len(refs & {old["record_ref"], new["record_ref"]})
    check.evidence = {
        "recall_status": _loopx_status(result),
        "accepted_result_count": len(refs),
        "false_application_observed": bool(refs),
    }


#: LoopX's words for the guard reasons its Stage 4 cases name; ours follow in
#: ``guard_reason_codes`` (docs/loopx-hosts.md).
LOOPX_REASON_CODES = {
    "freshness_stale": "source_revision_mismatch",
    "revision_mismatch": "request_revision_mismatch",
    "checkpoint_actor_mismatch": "authority_actor_mismatch",
}


def _loopx_codes(codes: list[str]) -> list[str]:
    return [LOOPX_REASON_CODES.get(code, code) for code in codes]


def case_stale_source_rejection(check: Check, rows) -> None:
    stale = fx.event("stale-1", "Old advice.", days_ago=fx.MAX_AGE_DAYS + 5)
    before = check.double.call_count
    receipt = check.checked(ingest_event, event=stale, execute=False)
    result = check.checked(
        _recall, rows[fx.ADVICE_CORPUS], "old advice",
        freshness={"corpus_revision": 0, "observed_at": fx.observed(days_ago=1)},
    )  # fmt: skip
    calls = check.double.call_count - before
    codes = sorted(_codes(result.reasons))
    check.that(result.status == "guard_blocked")
    check.that("revision_mismatch" in codes)
    check.that("freshness_stale" in codes and "source_stale" in receipt.reason_codes)
    check.that(calls == 0)
    check.evidence = {
        "recall_status": result.status,
        "reason_codes": _loopx_codes(codes),
        "provider_call_count": calls,
        "false_application_observed": calls > 0,
        "guard_reason_codes": codes,
    }


def case_multi_person_authority_conditions(check: Check, rows) -> None:
    matching = services.review_candidate(candidate=fx.policy_candidate(), decision="accept")
    other = services.review_candidate(
        candidate=fx.policy_candidate(actor=fx.OTHER_ACTOR), decision="accept"
    )
    codes = _codes(other.evaluation.reasons)
    check.that(matching.evaluation.guard_status == "passed")
    check.that(other.evaluation.guard_status == "guard_blocked")
    check.that("checkpoint_actor_mismatch" in codes)
    check.evidence = {
        "matching_actor_guard": matching.evaluation.guard_status == "passed",
        "mismatched_actor_guard": other.evaluation.guard_status == "passed",
        "reason_codes": _loopx_codes(codes),
        "guard_reason_codes": codes,
    }


def _apply(recall: RecallOutcome, *, verified: bool) -> ApplicationOutcome:
    """A preview application of every result of ``recall`` (nothing is recorded)."""
    return services.record_application(
        document=c.instance(
            c.APPLICATION_SCHEMA,
            recall_id=recall.recall_id,
            decision="apply",
            memory_refs=_refs(recall),
            reasoning_summary="The focused fix matches the recalled advice.",
            artifact_verification={
                "artifact_ref": "patch:eval/1",
                "artifact_digest": "sha256:" + "a" * 64 if verified else None,
                "verified": verified,
            },
        ),
        execute=False,
    )


def case_gate_non_override(check: Check, rows) -> None:
    """An applied memory never widens authority: a candidate asking for scopes beyond its
    checkpoint is ``no_write``, and an application that is applied grants nothing."""
    wider = fx.policy_candidate(scopes=[*fx.SCOPES, "eval_module.merge"])
    review = services.review_candidate(candidate=wider, decision="accept")
    _activate(fx.event("gate-1", "Prefer the focused fix over a broad refactor."))
    applied = _apply(
        check.checked(_recall, rows[fx.ADVICE_CORPUS], "focused fix broad refactor"),
        verified=True,
    )
    grants = review.effective != "no_write"  # a review grants no authority of its own
    verified = applied.verdict.artifact["verified"] is True
    check.that(applied.status == "applied")
    check.that(review.evaluation.guard_status == "guard_blocked" and not grants)
    check.that(verified)
    check.that(applied.user_gate is False and applied.recorded is False)
    if grants:
        check.false_applications += 1
    check.evidence = {
        "application_status": applied.status,
        "grants_new_action_authority": grants,
        "current_artifact_verified": verified,
        "false_application_observed": grants,
    }


def case_candidate_ranking_influence(check: Check, rows) -> None:
    record = _activate(fx.event("rank-1", "Prefer the focused fix over a broad refactor."))
    result = check.checked(_recall, rows[fx.ADVICE_CORPUS], "focused fix broad refactor")
    refs = _refs(result)
    unverified = _apply(result, verified=False)
    verified = _apply(result, verified=True)
    top = "focused_fix" if refs[:1] == [record["record_ref"]] else "broad_refactor"
    check.that(top == "focused_fix")
    check.that(verified.status == "applied")
    check.that(unverified.status == "not_applied")  # no influence before verification
    check.that(bool(verified.verdict.ref_digests))
    if unverified.status == "applied":
        check.false_applications += 1
    check.evidence = {
        "top_candidate": top,
        "application_status": verified.status,
        "shared_core": SHARED_CORE,
    }


def case_large_edge_case_patch_protection(check: Check, rows) -> None:
    route = routing.route(fx.pr_3237_case())
    check.that(route.decision == "meta_design_gate")
    check.that(route.pilot_authorized is False)
    check.that(route.memory_patch_authority is False)
    check.that(set(route.missing) == {"effect", "ux", "performance"})
    observed = route.pilot_authorized or route.memory_patch_authority
    if observed:
        check.false_applications += 1
    check.evidence = {
        "decision": route.decision,
        "pilot_authorized": route.pilot_authorized,
        "memory_patch_authority": route.memory_patch_authority,
        "missing_required_evidence": route.missing,
        "false_application_observed": observed,
    }


CASES: dict[str, Callable[[Check, dict], None]] = {
    "compact_restart_survival": case_compact_restart_survival,
    "project_module_scope_isolation": case_project_module_scope_isolation,
    "supersede_revoke_rejection": case_supersede_revoke_rejection,
    "stale_source_rejection": case_stale_source_rejection,
    "multi_person_authority_conditions": case_multi_person_authority_conditions,
    "gate_non_override": case_gate_non_override,
    "candidate_ranking_influence": case_candidate_ranking_influence,
    "large_edge_case_patch_protection": case_large_edge_case_patch_protection,
}
