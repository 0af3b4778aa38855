"""Stage 4: the evaluation harness and release gate (``reward_memory evaluate``).

Eight cases run the real candidate, ingest, recall, application, lifecycle and route
guard code inside a rolled-back sandbox (``evaluation_fixtures``) against a provider
double. This module only orchestrates, asserts, measures and decides the gate:
``ready_for_bounded_dogfood`` when every case passes and provider writes during the
checked steps, persistent storage writes, false applications, maintainer interruptions
and user gates are all zero — never a production claim.
"""

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loopx_site.core import clock
from loopx_site.core.encoding import dumps
from reward_memory import contracts as c
from reward_memory import evaluation_fixtures as fx
from reward_memory import principals, providers, routing, selectors, services
from reward_memory.documents import recall as recall_documents
from reward_memory.documents import registry
from reward_memory.documents import review as review_documents
from reward_memory.documents import route_check as route_documents
from reward_memory.domain import candidates
from reward_memory.models import Corpus, LocalProviderDocument, MemoryRecord
from reward_memory.providers.double import ProviderDouble
from reward_memory.services import activation, roles
from reward_memory.services.ingest import IngestEvaluation, activation_plan, ingest_event

CASE_IDS = (
    "compact_restart_survival",
    "project_module_scope_isolation",
    "supersede_revoke_rejection",
    "stale_source_rejection",
    "multi_person_authority_conditions",
    "gate_non_override",
    "candidate_ranking_influence",
    "large_edge_case_patch_protection",
)
ZERO_METRICS = (  # any of these nonzero holds the gate (LoopX's list)
    "storage_write_bytes",
    "provider_write_count",
    "external_write_count",
    "false_application_count",
    "maintainer_interruption_count",
    "user_gate_count",
)
SUMMED_METRICS = ("assertion_count", "latency_ms", "model_tokens", "public_evidence_bytes")
SUMMED_METRICS += ZERO_METRICS  # LoopX's metric order
# the shared application core the ranking case runs (LoopX names its own module)
SHARED_CORE = "reward_memory.services.record_application"
GATE_READY = "ready_for_bounded_dogfood"


@dataclass(frozen=True)
class Evaluation:
    """One run of the eight cases (``documents.evaluation.evaluation`` renders it): each
    case's measurements, the summed metrics and what holds the release gate (none: the
    gate is ready)."""

    cases: list[dict[str, Any]]
    metrics: dict[str, Any]
    reasons: list[str]

    @property
    def gate_status(self) -> str:
        """The release gate: ready for bounded dogfood exactly when no reason is left."""
        return "hold" if self.reasons else GATE_READY


class _Check:
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


def _setup() -> dict[str, Any]:
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


def _recall(corpus, query, **overrides) -> dict[str, Any]:
    """One executed recall, as its edges render it (the cases read the document)."""
    recalled = services.recall(request=fx.recall_request(corpus, query, **overrides), execute=True)
    return recall_documents.recall_result(recalled)


def _loopx_status(result: dict[str, Any]) -> str:
    """The recall status in LoopX's word (``completed`` for ours ``ok``)."""
    return recall_documents.LOOPX_STATUS.get(result["status"], result["status"])


def _codes(document: dict[str, Any]) -> list[str]:
    return [r["code"] for r in document["guard"]["reasons"]]


def case_compact_restart_survival(check: _Check, rows) -> None:
    record = _activate(fx.event("restart-1", "Lead summaries with the user-visible effect."))
    envelope = registry.record_envelope(selectors.get_record(record["record_ref"]))
    restarted = ProviderDouble()  # a new process: only the provider's storage survives
    restarted.documents = dict(check.double.documents)
    with providers.use("double", restarted):
        result = _recall(rows[fx.ADVICE_CORPUS], "summaries user-visible effect")
    readback = [i["memory_ref"] for i in result["items"]] == [record["record_ref"]]
    check.that(
        record["status"] == "activated" and envelope["schema_version"] == c.ACTIVE_RECORD_SCHEMA
    )
    check.that(_loopx_status(result) == "completed")
    check.that(readback)
    check.that(result["provider_calls"] == 1)
    check.evidence = {
        "serialized_bytes": len(dumps(envelope).encode("utf-8")),
        "recall_status": _loopx_status(result),
        "readback_verified": readback,
    }


def case_project_module_scope_isolation(check: _Check, rows) -> None:
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
    check.that(project["status"] == "guard_blocked")
    check.that("project_mismatch" in _codes(project))
    check.that(surface["status"] == "guard_blocked")
    check.that("surface_mismatch" in _codes(surface))
    check.that(calls == 0)
    check.false_applications += len(project["items"]) + len(surface["items"])
    check.evidence = {
        "project_status": project["status"],
        "surface_status": surface["status"],
        "provider_call_count": calls,
        "false_application_observed": calls > 0,
    }


def case_supersede_revoke_rejection(check: _Check, rows) -> None:
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
    refs = {i["memory_ref"] for i in result["items"]}
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


def case_stale_source_rejection(check: _Check, rows) -> None:
    stale = fx.event("stale-1", "Old advice.", days_ago=fx.MAX_AGE_DAYS + 5)
    before = check.double.call_count
    receipt = check.checked(ingest_event, event=stale, execute=False)
    result = check.checked(
        _recall, rows[fx.ADVICE_CORPUS], "old advice",
        freshness={"corpus_revision": 0, "observed_at": fx.observed(days_ago=1)},
    )  # fmt: skip
    calls = check.double.call_count - before
    codes = sorted(_codes(result))
    check.that(result["status"] == "guard_blocked")
    check.that("revision_mismatch" in codes)
    check.that("freshness_stale" in codes and "source_stale" in receipt.reason_codes)
    check.that(calls == 0)
    check.evidence = {
        "recall_status": result["status"],
        "reason_codes": _loopx_codes(codes),
        "provider_call_count": calls,
        "false_application_observed": calls > 0,
        "guard_reason_codes": codes,
    }


def case_multi_person_authority_conditions(check: _Check, rows) -> None:
    matching = review_documents.decision(
        services.review_candidate(candidate=fx.policy_candidate(), decision="accept")
    )
    other = review_documents.decision(
        services.review_candidate(
            candidate=fx.policy_candidate(actor=fx.OTHER_ACTOR), decision="accept"
        )
    )
    codes = _codes(other)
    check.that(matching["guard"]["status"] == "passed")
    check.that(other["guard"]["status"] == "guard_blocked")
    check.that("checkpoint_actor_mismatch" in codes)
    check.evidence = {
        "matching_actor_guard": matching["guard"]["status"] == "passed",
        "mismatched_actor_guard": other["guard"]["status"] == "passed",
        "reason_codes": _loopx_codes(codes),
        "guard_reason_codes": codes,
    }


def _apply(recall: dict[str, Any], *, verified: bool) -> dict[str, Any]:
    """A preview application of every result of ``recall`` (nothing is recorded)."""
    return services.record_application(
        document=c.instance(
            c.APPLICATION_SCHEMA,
            recall_id=recall["recall_id"],
            decision="apply",
            memory_refs=[i["memory_ref"] for i in recall["items"]],
            reasoning_summary="The focused fix matches the recalled advice.",
            artifact_verification={
                "artifact_ref": "patch:eval/1",
                "artifact_digest": "sha256:" + "a" * 64 if verified else None,
                "verified": verified,
            },
        ),
        execute=False,
    )


def case_gate_non_override(check: _Check, rows) -> None:
    """An applied memory never widens authority: a candidate asking for scopes beyond its
    checkpoint is ``no_write``, and an application that is applied grants nothing."""
    wider = fx.policy_candidate(scopes=[*fx.SCOPES, "eval_module.merge"])
    review = review_documents.decision(
        services.review_candidate(candidate=wider, decision="accept")
    )
    _activate(fx.event("gate-1", "Prefer the focused fix over a broad refactor."))
    applied = _apply(
        check.checked(_recall, rows[fx.ADVICE_CORPUS], "focused fix broad refactor"),
        verified=True,
    )
    grants = review.get("grants_new_action_authority") is True or (
        review["effective_decision"] != "no_write"
    )
    verified = applied["artifact_verification"]["verified"] is True
    check.that(applied["status"] == "applied")
    check.that(review["guard"]["status"] == "guard_blocked" and not grants)
    check.that(verified)
    check.that(applied["user_gate"] is False and applied["recorded"] is False)
    if grants:
        check.false_applications += 1
    check.evidence = {
        "application_status": applied["status"],
        "grants_new_action_authority": grants,
        "current_artifact_verified": verified,
        "false_application_observed": grants,
    }


def case_candidate_ranking_influence(check: _Check, rows) -> None:
    record = _activate(fx.event("rank-1", "Prefer the focused fix over a broad refactor."))
    result = check.checked(_recall, rows[fx.ADVICE_CORPUS], "focused fix broad refactor")
    refs = [i["memory_ref"] for i in result["items"]]
    unverified = _apply(result, verified=False)
    verified = _apply(result, verified=True)
    top = "focused_fix" if refs[:1] == [record["record_ref"]] else "broad_refactor"
    check.that(top == "focused_fix")
    check.that(verified["status"] == "applied")
    check.that(unverified["status"] == "not_applied")  # no influence before verification
    check.that(bool(verified["memory_ref_digests"]))
    if unverified["status"] == "applied":
        check.false_applications += 1
    check.evidence = {
        "top_candidate": top,
        "application_status": verified["status"],
        "shared_core": SHARED_CORE,
    }


def case_large_edge_case_patch_protection(check: _Check, rows) -> None:
    route = route_documents.route(routing.route(fx.pr_3237_case()))
    check.that(route["decision"] == "meta_design_gate")
    check.that(route["pilot_authorized"] is False)
    check.that(route["memory_patch_authority"] is False)
    check.that(set(route["missing_required_evidence"]) == {"effect", "ux", "performance"})
    observed = route["pilot_authorized"] or route["memory_patch_authority"]
    if observed:
        check.false_applications += 1
    check.evidence = {
        "decision": route["decision"],
        "pilot_authorized": route["pilot_authorized"],
        "memory_patch_authority": route["memory_patch_authority"],
        "missing_required_evidence": route["missing_required_evidence"],
        "false_application_observed": observed,
    }


CASES: dict[str, Callable[[_Check, dict], None]] = {
    "compact_restart_survival": case_compact_restart_survival,
    "project_module_scope_isolation": case_project_module_scope_isolation,
    "supersede_revoke_rejection": case_supersede_revoke_rejection,
    "stale_source_rejection": case_stale_source_rejection,
    "multi_person_authority_conditions": case_multi_person_authority_conditions,
    "gate_non_override": case_gate_non_override,
    "candidate_ranking_influence": case_candidate_ranking_influence,
    "large_edge_case_patch_protection": case_large_edge_case_patch_protection,
}


def _run_case(case_id: str) -> dict[str, Any]:
    started = time.perf_counter_ns()
    failure = None
    before = _storage_rows()
    with fx.sandbox() as double:
        check = _Check(double)
        try:
            rows = _setup()
            CASES[case_id](check, rows)
        except Exception as exc:  # a case that raises fails; the harness goes on
            failure = type(exc).__name__
    latency_ms = max(0, (time.perf_counter_ns() - started) // 1_000_000)
    evidence = json.dumps(check.evidence, sort_keys=True, separators=(",", ":"))
    passed = failure is None and check.passed
    return {
        "case_id": case_id,
        "passed": passed,
        "assertion_count": len(check.assertions),
        "failure_kind": failure or (None if passed else "assertion_failed"),
        "latency_ms": latency_ms,
        "public_evidence_bytes": len(evidence.encode("utf-8")),
        "model_tokens": 0,
        "storage_write_bytes": _storage_bytes_since(before),
        "provider_write_count": check.provider_writes,
        "external_write_count": 0,  # the provider is the double; nothing else is reached
        "false_application_count": check.false_applications,
        "maintainer_interruption_count": 0,
        "user_gate_count": 0,
        "evidence": check.evidence,
    }


def _storage_rows() -> dict[str, set]:
    """The primary keys of the persistent rows a case could leave behind."""
    return {
        model.__name__: set(model.objects.values_list("pk", flat=True))
        for model in (LocalProviderDocument, MemoryRecord)
    }


def _storage_bytes_since(before: dict[str, set]) -> int:
    """Bytes (canonical JSON of each row) of the rows added since ``before``."""
    total = 0
    for model in (LocalProviderDocument, MemoryRecord):
        added = set(model.objects.values_list("pk", flat=True)) - before[model.__name__]
        for row in model.objects.filter(pk__in=added).values():
            total += len(dumps(row).encode("utf-8"))
    return total


def evaluate(*, progress: Callable[[str], None] | None = None) -> Evaluation:
    cases = []
    for index, case_id in enumerate(CASE_IDS, start=1):
        if progress:
            progress(f"[{index}/{len(CASE_IDS)}] {case_id}")
        cases.append(_run_case(case_id))
    failed = [c["case_id"] for c in cases if not c["passed"]]
    metrics = {
        "case_count": len(cases),
        "passed_case_count": len(cases) - len(failed),
        "failed_case_count": len(failed),
        **{key: sum(c[key] for c in cases) for key in SUMMED_METRICS},
    }
    reasons = [f"case_failed:{case_id}" for case_id in failed]
    reasons += [f"nonzero:{m}" for m in ZERO_METRICS if metrics[m]]
    return Evaluation(cases, metrics, reasons)
