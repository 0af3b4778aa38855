"""Stage 5: dogfood receipts, batch readiness and utility observations
(``reward_memory dogfood-evaluate --input FILE``). No provider call, no write.

Evidence is a server record: input is ``{"observations": [...], "operator_controls":
[{"control_id"}]}``. Each observation names a *stored* ``ApplicationReceipt`` of the
caller's scope by ``application_receipt.application_receipt_id``; its status, recall,
readback, artifact verification, corpus, surface and memory digests come from the stored
rows (a differing value in the observation → ``application_receipt_mismatch``; an
unknown or foreign id → ``application_receipt_not_found``). Each operator control names
a stored ``OperatorControl`` (``operator-control --execute``) by ``control_id``
(``operator_control_not_found`` otherwise). Each observation binds
one real module outcome to a Stage 3 application receipt and becomes a
``reward_memory_dogfood_receipt_v1`` (``application_disposition``
``applied|not_applied|refuted``; applied/refuted need exact provider readback and
current-artifact verification). An optional ``utility`` proposal becomes a
``memory_utility_observation_v0`` with typed evidence and a stable ``observation_id``.

``reward_memory_dogfood_batch_v1`` is ``ready_for_bounded_issue_fix_pilot`` only when the
Stage 4 gate passes (run live) and the batch has ≥ 1 Issue Fix result, ≥ 2 distinct
LoopX domains, all three dispositions and both edit and retire operator controls.
A repeated ``application_receipt_id`` or control id is refused; a conflicting utility
judgement under one observation id is refused. Utility never counts toward readiness,
and a missing, timed-out (``{"status": "timed_out"}``) or malformed utility evaluation
fails open: the receipt's ``utility_evaluation`` says which, nothing else changes.
"""

from dataclasses import dataclass
from typing import Any

from loopx_site.core.canonical import digest_ref
from reward_memory import contracts as c
from reward_memory import evaluation as stage4
from reward_memory import selectors
from reward_memory.contracts import DISPOSITIONS, UTILITY_LABELS
from reward_memory.domain import guards
from reward_memory.domain import validation as v
from reward_memory.errors import RewardMemoryError, invalid

NOT_APPLIED_OUTCOMES = ("ignored", "failed", "not_available", "available_not_applied")
DOMAIN_FAMILIES = ("issue_fix", "loopx")
OPERATOR_ACTIONS = ("edit", "retire")
STRONG_EVIDENCE = ("owner_correction", "controlled_replay", "deterministic_effect")
EVIDENCE_BASES = (*STRONG_EVIDENCE, "evaluator_inference", "insufficient")
MAX_RECEIPTS = 24
MAX_CONTROLS = 8


def disposition(outcome: str) -> str:
    """An application outcome as the batch counts it: applied, refuted or not_applied."""
    return outcome if outcome in ("applied", "refuted") else "not_applied"


@dataclass(frozen=True)
class Settlement:
    """One observation's identity: its domain, the stored application receipt, the
    verified artifact and the application outcome."""

    family: str
    domain_id: str
    receipt_id: str
    artifact_ref: str
    outcome: str

    @property
    def disposition(self) -> str:
        return disposition(self.outcome)


@dataclass(frozen=True)
class Utility:
    """A typed utility judgement of one settlement (``memory_utility_observation_v0``)."""

    observation_id: str
    label: str
    basis: str
    strength: str
    evidence_ref: str | None
    memory_ref_digests: list[str]
    evaluator: str
    version: str


@dataclass(frozen=True)
class DogfoodReceipt:
    """One observation settled against its stored application receipt (``facts``:
    ``selectors.application_receipt_facts``) with its utility evaluation (``utility``
    ``None`` unless ``observed``) — ``documents.dogfood.receipt`` renders it once, its
    ``receipt_id`` a digest of its stable fields."""

    settled: Settlement
    facts: dict[str, Any]
    module_outcome: dict[str, Any]
    cost: dict[str, int]
    intervention: dict[str, Any]
    utility: Utility | None
    utility_evaluation: dict[str, Any]

    @property
    def memory_ref_digests(self) -> list[str]:
        return sorted(self.facts["memory_ref_digests"])


@dataclass(frozen=True)
class Batch:
    """A dogfood batch as decided (``documents.dogfood.batch`` renders it): what holds it
    (none: ready), the Stage 4 gate's status, its receipts and stored operator controls."""

    reasons: list[str]
    gate_status: str
    receipts: list[DogfoodReceipt]
    controls: list[dict[str, Any]]
    issue_fix: int
    loopx_domains: list[str]


def _safe(value: Any, field: str, *, max_length: int = 360) -> str:
    text = v.text(value, field, max_length=max_length)
    if not guards.is_public_safe_text(text):
        raise invalid(field, f"{field} must be public-safe (no URL, local path or secret)")
    return text


def _strict(document: dict, allowed: set[str], where: str) -> None:
    for key in document:
        if key not in allowed:
            raise invalid(f"{where}.{key}", "field not modelled (raw content is never kept)")


def _counter(value: Any, field: str) -> int:
    return v.integer(value, field, minimum=0, maximum=10**9)


APPLICATION_FIELDS = {
    "schema_version", "application_receipt_id", "outcome", "artifact_ref", "corpus_id",
    "surface_id", "memory_ref_digests", "result_readback_verified", "current_artifact_verified",
    "grants_new_action_authority", "raw_content_captured", "external_writes_performed",
}  # fmt: skip
UTILITY_FAIL_OPEN = ("missing", "timed_out")


def build_receipt(observation: Any, index: int, *, viewer=None) -> DogfoodReceipt:
    where = f"observations.{index}"
    o = v.obj(observation, where)
    _strict(
        o,
        {"domain_family", "domain_id", "application_receipt", "module_outcome", "cost",
         "intervention", "bot_feedback", "utility", "raw_content_captured"},
        where,
    )  # fmt: skip
    if o.get("raw_content_captured", False) is not False:
        raise invalid(f"{where}.raw_content_captured", "raw content is never captured")
    family = v.choice(o.get("domain_family"), f"{where}.domain_family", DOMAIN_FAMILIES)
    domain_id = v.surface(o.get("domain_id"), f"{where}.domain_id")
    if not domain_id.startswith(f"{family}."):
        raise invalid(f"{where}.domain_id", f"a {family} domain id starts with {family}.")
    receipt_id, facts, outcome, app_artifact = _application(o, where, viewer)
    module = v.obj(o.get("module_outcome"), f"{where}.module_outcome")
    artifact_ref = _verified_artifact(module, f"{where}.module_outcome", facts, app_artifact)
    mw = f"{where}.module_outcome"
    cost = v.obj(o.get("cost"), f"{where}.cost")
    intervention = v.obj(o.get("intervention"), f"{where}.intervention")
    count = _counter(intervention.get("count"), f"{where}.intervention.count")
    outcome_doc = {
        "verified": True,
        "outcome_ref": v.ref(module.get("outcome_ref"), f"{mw}.outcome_ref"),
        "outcome_status": v.token(module.get("outcome_status"), f"{mw}.outcome_status"),
        "summary": _safe(module.get("summary"), f"{mw}.summary"),
    }
    costs = {
        k: _counter(cost.get(k), f"{where}.cost.{k}")
        for k in ("latency_ms", "model_tokens", "provider_call_count")
    }
    summary = _safe(intervention.get("summary"), f"{where}.intervention.summary") if count else None
    settled = Settlement(family, domain_id, receipt_id, artifact_ref, outcome)
    digests = sorted(facts["memory_ref_digests"])
    utility, utility_evaluation = _utility(
        o.get("utility"), digests, outcome_doc["outcome_ref"], f"{where}.utility"
    )
    return DogfoodReceipt(
        settled, facts, outcome_doc, costs, {"count": count, "summary": summary},
        utility, utility_evaluation,
    )  # fmt: skip


def _application(o: dict, where: str, viewer):
    """The observation's application receipt checked against the stored one of the
    caller's scope (it may not override a stored fact; an applied or refuted one needs
    exact readback, a verified artifact and attributed memory): ``(receipt_id, facts,
    outcome, artifact_ref | None)``."""
    app = v.obj(o.get("application_receipt"), f"{where}.application_receipt")
    aw = f"{where}.application_receipt"
    if "schema_version" in app:
        v.schema(app, c.APPLICATION_RECEIPT_SCHEMA, f"{aw}.schema_version")
    _strict(app, APPLICATION_FIELDS, aw)
    receipt_id = v.ref(app.get("application_receipt_id"), f"{aw}.application_receipt_id")
    for flag in (
        "grants_new_action_authority",
        "raw_content_captured",
        "external_writes_performed",
    ):
        if app.get(flag, False) is not False:
            raise invalid(f"{aw}.{flag}", f"an application receipt never has {flag}")
    facts = stored_facts(receipt_id, f"{aw}.application_receipt_id", viewer=viewer)
    outcome = _outcome(app, facts, aw)
    settles_as = disposition(outcome)
    readback = facts["result_readback_verified"]
    current = facts["current_artifact_verified"]
    digests = facts["memory_ref_digests"]
    _same(app, "result_readback_verified", readback, aw)
    _same(app, "current_artifact_verified", current, aw)
    _same(app, "corpus_id", facts["corpus_id"], aw)
    _same(app, "surface_id", facts["surface_id"], aw)
    if "memory_ref_digests" in app:
        claimed = v.string_list(
            app.get("memory_ref_digests"), f"{aw}.memory_ref_digests", v.digest, max_items=20
        )
        _same({"memory_ref_digests": sorted(claimed)}, "memory_ref_digests", digests, aw)
    if settles_as != "not_applied":  # the stored row's facts (record_application's rule)
        if not readback:
            raise invalid(f"{aw}.result_readback_verified", f"{settles_as} needs exact readback")
        if not current:
            raise invalid(
                f"{aw}.current_artifact_verified", f"{settles_as} needs artifact verification"
            )
        if not digests:
            raise invalid(f"{aw}.memory_ref_digests", f"{settles_as} needs attributed memory")
    app_artifact = (
        v.artifact_ref(app["artifact_ref"], f"{aw}.artifact_ref") if "artifact_ref" in app else None
    )
    return receipt_id, facts, outcome, app_artifact


def _verified_artifact(module: dict, mw: str, facts: dict[str, Any], app_artifact) -> str:
    """The module outcome's artifact: the one the stored application verified (and the
    observation's application names, if it does), with a verified real outcome."""
    artifact_ref = v.artifact_ref(module.get("artifact_ref"), f"{mw}.artifact_ref")
    if app_artifact is not None and app_artifact != artifact_ref:
        raise invalid(f"{mw}.artifact_ref", "module outcome and application artifact differ")
    if digest_ref(artifact_ref) != facts["artifact_ref_digest"]:
        raise _mismatch(f"{mw}.artifact_ref", "the stored application verified another artifact")
    if module.get("outcome_verified") is not True:
        raise invalid(f"{mw}.outcome_verified", "dogfood needs a verified real module outcome")
    return artifact_ref


def _utility(proposal: Any, digests: list[str], outcome_ref: str, where: str):
    """Fail open: a missing, timed-out or malformed utility evaluation leaves the
    settlement and the batch readiness as they are (``utility_evaluation`` says which)."""
    if proposal is None:
        return None, {"status": "missing", "reason": None}
    if isinstance(proposal, dict) and set(proposal) == {"status"}:
        status = proposal["status"]
        if status in UTILITY_FAIL_OPEN:
            return None, {"status": status, "reason": None}
    try:
        utility = build_utility(proposal, digests, outcome_ref, where)
        return utility, {"status": "observed", "reason": None}
    except RewardMemoryError as exc:
        return None, {"status": "malformed", "reason": {"code": exc.code, "field": exc.field}}


def _outcome(app: dict, facts: dict[str, Any], aw: str) -> str:
    """The stored status decides applied/refuted/not_applied; an observation may name
    which not-applied outcome it was, never turn one status into another."""
    stored = facts["status"]
    claimed = app.get("outcome")
    if claimed is None:
        return stored if stored != "not_applied" else "available_not_applied"
    claimed = v.choice(claimed, f"{aw}.outcome", ("applied", "refuted", *NOT_APPLIED_OUTCOMES))
    if (claimed if claimed in ("applied", "refuted") else "not_applied") != stored:
        raise _mismatch(f"{aw}.outcome", f"the stored application receipt is {stored}")
    return claimed


def _same(app: dict, key: str, stored: Any, aw: str) -> None:
    if key in app and app[key] != stored:
        raise _mismatch(f"{aw}.{key}", "the observation may not override the stored receipt")


def _mismatch(field: str, message: str) -> RewardMemoryError:
    return RewardMemoryError("application_receipt_mismatch", message, field=field)


def stored_facts(receipt_id: str, field: str, *, viewer=None) -> dict[str, Any]:
    """Recall, readback and artifact verification of a stored application receipt of the
    caller's scope (``selectors.application_receipt_facts``; unknown or foreign →
    ``application_receipt_not_found``, naming the id)."""
    return selectors.application_receipt_facts(receipt_id, field=field, viewer=viewer)


def build_utility(proposal: Any, digests: list[str], outcome_ref: str, where: str) -> Utility:
    """The typed utility judgement of the settlement of ``digests`` (sorted memory ref
    digests) and ``outcome_ref``; its ``observation_id`` is stable per attributed object,
    evidence and evaluator."""
    p = v.obj(proposal, where)
    _strict(p, {"label", "evidence_basis", "evidence_ref", "evaluator_id", "evaluation_version",
                "reason_code"}, where)  # fmt: skip
    label = v.choice(p.get("label"), f"{where}.label", UTILITY_LABELS)
    basis = v.choice(p.get("evidence_basis"), f"{where}.evidence_basis", EVIDENCE_BASES)
    evidence_ref = p.get("evidence_ref")
    if basis in STRONG_EVIDENCE or evidence_ref is not None:
        evidence_ref = _safe(evidence_ref, f"{where}.evidence_ref", max_length=256)
    if basis == "insufficient" and label != "unknown":
        raise invalid(f"{where}.label", "without attribution evidence the label is unknown")
    evaluator = v.identifier(p.get("evaluator_id"), f"{where}.evaluator_id")
    version = v.identifier(p.get("evaluation_version"), f"{where}.evaluation_version")
    identity = {  # the attributed object (memory set + verified outcome), evidence, evaluator
        "memory_ref_digests": digests,
        "outcome_ref": outcome_ref,
        "evidence_basis": basis,
        "evidence_ref": evidence_ref,
        "evaluator_id": evaluator,
        "evaluation_version": version,
    }
    strength = (
        "strong"
        if basis in STRONG_EVIDENCE
        else ("weak" if basis == "evaluator_inference" else "lineage_only")
    )
    return Utility(
        digest_ref(identity), label, basis, strength, evidence_ref, digests, evaluator, version
    )


def evaluate_batch(
    document: Any,
    *,
    evaluation: stage4.Evaluation | None = None,
    viewer: tuple[str, str | None] | None = None,
) -> Batch:
    """The batch of ``document`` judged against the Stage 4 gate (``evaluation``; run
    live when ``None``)."""
    d = v.obj(document, None)
    _strict(d, {"schema_version", "observations", "operator_controls"}, "input")
    observations = d.get("observations")
    # an empty batch is evaluated (LoopX: ``hold`` with every missing reason), not refused
    if not isinstance(observations, list) or len(observations) > MAX_RECEIPTS:
        raise invalid("observations", f"observations must list 0..{MAX_RECEIPTS} items")
    controls_doc = d.get("operator_controls") or []
    if not isinstance(controls_doc, list) or len(controls_doc) > MAX_CONTROLS:
        raise invalid("operator_controls", f"operator_controls lists at most {MAX_CONTROLS}")
    receipts = [build_receipt(o, i, viewer=viewer) for i, o in enumerate(observations)]
    _check_counted_once(receipts)
    controls = _stored_controls(controls_doc, viewer)
    if evaluation is None:
        evaluation = stage4.evaluate()
    gate_ready = evaluation.gate_status == stage4.GATE_READY
    settled = [r.settled for r in receipts]
    issue_fix = sum(s.family == "issue_fix" for s in settled)
    loopx_domains = sorted({s.domain_id for s in settled if s.family == "loopx"})
    dispositions = {s.disposition for s in settled}
    actions = {ctl["action"] for ctl in controls}
    reasons = []
    if not gate_ready:
        reasons.append("stage4_release_gate_not_ready")
    if issue_fix < 1:
        reasons.append("issue_fix_outcome_missing")
    if len(loopx_domains) < 2:
        reasons.append("two_loopx_domains_required")
    reasons += [
        f"application_disposition_missing:{x}" for x in DISPOSITIONS if x not in dispositions
    ]
    reasons += [f"operator_control_missing:{a}" for a in OPERATOR_ACTIONS if a not in actions]
    return Batch(reasons, evaluation.gate_status, receipts, controls, issue_fix, loopx_domains)


def _check_counted_once(receipts: list[DogfoodReceipt]) -> None:
    """An application settlement is counted once, and one observation id carries one
    judgement."""
    seen: set[str] = set()
    for i, r in enumerate(receipts):
        if r.settled.receipt_id in seen:
            raise RewardMemoryError(
                "duplicate_receipt",
                "an application settlement is counted once: duplicate application_receipt_id",
                field=f"observations.{i}.application_receipt.application_receipt_id",
            )
        seen.add(r.settled.receipt_id)
    judgements: dict[str, str] = {}
    for i, r in enumerate(receipts):
        u = r.utility
        if u is None:
            continue
        if judgements.setdefault(u.observation_id, u.label) != u.label:
            raise RewardMemoryError(
                "utility_observation_conflict",
                "a different judgement under the same observation id is a conflict; supply "
                "new evidence or a new evaluation version",
                field=f"observations.{i}.utility",
            )


def _stored_controls(controls_doc: list, viewer) -> list[dict[str, Any]]:
    """The stored operator controls the batch names (each once, never overridden)."""
    controls, refs = [], set()
    for i, ctl in enumerate(controls_doc):
        cw = f"operator_controls.{i}"
        ctl = v.obj(ctl, cw)
        _strict(ctl, {"control_id", "action", "control_ref"}, cw)
        control_id = v.ref(ctl.get("control_id"), f"{cw}.control_id")
        stored = selectors.operator_control_facts(
            control_id, field=f"{cw}.control_id", viewer=viewer
        )
        for key in ("action", "control_ref"):
            if key in ctl and ctl[key] != stored[key]:
                raise RewardMemoryError(
                    "operator_control_mismatch",
                    "the batch may not override the stored operator control",
                    field=f"{cw}.{key}",
                )
        if control_id in refs:
            raise RewardMemoryError(
                "duplicate_receipt",
                "an operator control is counted once",
                field=f"{cw}.control_id",
            )
        refs.add(control_id)
        controls.append(stored)
    return controls
