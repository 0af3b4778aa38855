"""Stage 5: dogfood receipts, batch readiness and utility observations
(``reward_memory dogfood-evaluate --input FILE``). Pure: no provider call, no write.

Input: ``{"observations": [...], "operator_controls": [...]}``. Each observation binds
one real module outcome to a Stage 3 application receipt and becomes a
``reward_memory_dogfood_receipt_v1`` (``application_disposition``
``applied|not_applied|refuted``; applied/refuted need exact provider readback and
current-artifact verification). An optional ``utility`` proposal becomes a
``memory_utility_observation_v0`` with typed evidence and a stable ``observation_id``.

``reward_memory_dogfood_batch_v1`` is ``ready_for_bounded_issue_fix_pilot`` only when the
Stage 4 gate passes (run live) and the batch has ≥ 1 Issue Fix result, ≥ 2 distinct
LoopX domains, all three dispositions and both edit and retire operator controls.
A repeated ``application_receipt_id`` or control ref is refused; a conflicting utility
judgement under one observation id is refused. Utility never counts toward readiness.
"""

from typing import Any

from loopx_site.core.canonical import digest_ref
from reward_memory import contracts as c
from reward_memory import guards
from reward_memory import validation as v
from reward_memory.errors import RewardMemoryError, invalid

RECEIPT_SCHEMA = "reward_memory_dogfood_receipt_v1"
BATCH_SCHEMA = "reward_memory_dogfood_batch_v1"
UTILITY_SCHEMA = "memory_utility_observation_v0"
DISPOSITIONS = ("applied", "not_applied", "refuted")
NOT_APPLIED_OUTCOMES = ("ignored", "failed", "not_available", "available_not_applied")
DOMAIN_FAMILIES = ("issue_fix", "loopx")
OPERATOR_ACTIONS = ("edit", "retire")
UTILITY_LABELS = ("helpful", "harmful", "neutral", "unknown")
STRONG_EVIDENCE = ("owner_correction", "controlled_replay", "deterministic_effect")
EVIDENCE_BASES = (*STRONG_EVIDENCE, "evaluator_inference", "insufficient")
MAX_RECEIPTS = 24
MAX_CONTROLS = 8


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


def build_receipt(observation: Any, index: int) -> dict[str, Any]:
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
    app = v.obj(o.get("application_receipt"), f"{where}.application_receipt")
    aw = f"{where}.application_receipt"
    v.schema(app, c.APPLICATION_RECEIPT_SCHEMA, f"{aw}.schema_version")
    receipt_id = v.ref(app.get("application_receipt_id"), f"{aw}.application_receipt_id")
    outcome = v.choice(
        app.get("outcome"), f"{aw}.outcome", ("applied", "refuted", *NOT_APPLIED_OUTCOMES)
    )
    disposition = outcome if outcome in ("applied", "refuted") else "not_applied"
    readback = v.boolean(app.get("result_readback_verified"), f"{aw}.result_readback_verified")
    current = v.boolean(app.get("current_artifact_verified"), f"{aw}.current_artifact_verified")
    for flag in (
        "grants_new_action_authority",
        "raw_content_captured",
        "external_writes_performed",
    ):
        if app.get(flag, False) is not False:
            raise invalid(f"{aw}.{flag}", f"an application receipt never has {flag}")
    digests = v.string_list(
        app.get("memory_ref_digests"), f"{aw}.memory_ref_digests", v.digest, max_items=20
    )
    if disposition != "not_applied":
        if not readback:
            raise invalid(f"{aw}.result_readback_verified", f"{disposition} needs exact readback")
        if not current:
            raise invalid(
                f"{aw}.current_artifact_verified", f"{disposition} needs artifact verification"
            )
        if not digests:
            raise invalid(f"{aw}.memory_ref_digests", f"{disposition} needs attributed memory")
    artifact_ref = v.artifact_ref(app.get("artifact_ref"), f"{aw}.artifact_ref")
    module = v.obj(o.get("module_outcome"), f"{where}.module_outcome")
    mw = f"{where}.module_outcome"
    if v.artifact_ref(module.get("artifact_ref"), f"{mw}.artifact_ref") != artifact_ref:
        raise invalid(f"{mw}.artifact_ref", "module outcome and application artifact differ")
    if module.get("outcome_verified") is not True:
        raise invalid(f"{mw}.outcome_verified", "dogfood needs a verified real module outcome")
    cost = v.obj(o.get("cost"), f"{where}.cost")
    intervention = v.obj(o.get("intervention"), f"{where}.intervention")
    count = _counter(intervention.get("count"), f"{where}.intervention.count")
    receipt = {
        "ok": True,
        "schema_version": RECEIPT_SCHEMA,
        "domain_family": family,
        "domain_id": domain_id,
        "application_receipt_id": receipt_id,
        "artifact_ref": artifact_ref,
        "corpus_id": v.identifier(app.get("corpus_id"), f"{aw}.corpus_id"),
        "surface_id": v.surface(app.get("surface_id"), f"{aw}.surface_id"),
        "application_outcome": outcome,
        "application_disposition": disposition,
        "memory_ref_digests": sorted(digests),
        "module_outcome": {
            "verified": True,
            "outcome_ref": v.ref(module.get("outcome_ref"), f"{mw}.outcome_ref"),
            "outcome_status": v.token(module.get("outcome_status"), f"{mw}.outcome_status"),
            "summary": _safe(module.get("summary"), f"{mw}.summary"),
        },
        "verification": {
            "result_readback_verified": readback,
            "current_artifact_verified": current,
        },
        "cost": {
            k: _counter(cost.get(k), f"{where}.cost.{k}")
            for k in ("latency_ms", "model_tokens", "provider_call_count")
        },
        "intervention": {
            "count": count,
            "summary": _safe(intervention.get("summary"), f"{where}.intervention.summary")
            if count
            else None,
        },
        "grants_new_action_authority": False,
        "raw_content_captured": False,
        "external_writes_performed": False,
    }
    identity = {
        k: receipt[k] for k in ("schema_version", "application_receipt_id", "application_outcome")
    } | {
        "outcome_ref": receipt["module_outcome"]["outcome_ref"],
        "outcome_status": receipt["module_outcome"]["outcome_status"],
    }
    receipt["receipt_id"] = digest_ref(identity)
    receipt["utility_observation"] = (
        build_utility(o["utility"], receipt, f"{where}.utility") if "utility" in o else None
    )
    return receipt


def build_utility(proposal: Any, receipt: dict[str, Any], where: str) -> dict[str, Any]:
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
        "memory_ref_digests": receipt["memory_ref_digests"],
        "outcome_ref": receipt["module_outcome"]["outcome_ref"],
        "evidence_basis": basis,
        "evidence_ref": evidence_ref,
        "evaluator_id": evaluator,
        "evaluation_version": version,
    }
    return {
        "schema_version": UTILITY_SCHEMA,
        "observation_id": digest_ref(identity),
        "label": label,
        "evidence": {
            "basis": basis,
            "strength": "strong"
            if basis in STRONG_EVIDENCE
            else ("weak" if basis == "evaluator_inference" else "lineage_only"),
            "evidence_ref": evidence_ref,
        },
        "attribution": "set" if len(receipt["memory_ref_digests"]) > 1 else "single",
        "memory_ref_digests": receipt["memory_ref_digests"],
        "evaluator_id": evaluator,
        "evaluation_version": version,
        "grants_new_action_authority": False,
    }


def evaluate_batch(document: Any, *, evaluation: dict[str, Any] | None = None) -> dict[str, Any]:
    d = v.obj(document, None)
    _strict(d, {"schema_version", "observations", "operator_controls"}, "input")
    observations = d.get("observations")
    if not isinstance(observations, list) or not 1 <= len(observations) <= MAX_RECEIPTS:
        raise invalid("observations", f"observations must list 1..{MAX_RECEIPTS} items")
    controls_doc = d.get("operator_controls") or []
    if not isinstance(controls_doc, list) or len(controls_doc) > MAX_CONTROLS:
        raise invalid("operator_controls", f"operator_controls lists at most {MAX_CONTROLS}")
    receipts = [build_receipt(o, i) for i, o in enumerate(observations)]
    seen: set[str] = set()
    for i, r in enumerate(receipts):
        if r["application_receipt_id"] in seen:
            raise RewardMemoryError(
                "duplicate_receipt",
                "an application settlement is counted once: duplicate application_receipt_id",
                field=f"observations.{i}.application_receipt.application_receipt_id",
            )
        seen.add(r["application_receipt_id"])
    judgements: dict[str, str] = {}
    for i, r in enumerate(receipts):
        u = r["utility_observation"]
        if u is None:
            continue
        if judgements.setdefault(u["observation_id"], u["label"]) != u["label"]:
            raise RewardMemoryError(
                "utility_observation_conflict",
                "a different judgement under the same observation id is a conflict; supply "
                "new evidence or a new evaluation version",
                field=f"observations.{i}.utility",
            )
    controls, refs = [], set()
    for i, ctl in enumerate(controls_doc):
        cw = f"operator_controls.{i}"
        ctl = v.obj(ctl, cw)
        action = v.choice(ctl.get("action"), f"{cw}.action", OPERATOR_ACTIONS)
        ref = v.ref(ctl.get("control_ref"), f"{cw}.control_ref")
        if ref in refs:
            raise RewardMemoryError(
                "duplicate_receipt",
                "an operator control is counted once",
                field=f"{cw}.control_ref",
            )
        refs.add(ref)
        controls.append({"action": action, "control_ref": ref})

    if evaluation is None:
        from reward_memory import evaluation as stage4

        evaluation = stage4.evaluate()
    gate_ready = evaluation["release_gate"]["status"] == "ready_for_bounded_dogfood"
    issue_fix = sum(r["domain_family"] == "issue_fix" for r in receipts)
    loopx_domains = sorted({r["domain_id"] for r in receipts if r["domain_family"] == "loopx"})
    dispositions = {r["application_disposition"] for r in receipts}
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
    ready = not reasons
    return {
        "ok": True,
        "schema_version": BATCH_SCHEMA,
        "status": "ready_for_bounded_issue_fix_pilot" if ready else "not_ready",
        "ready": ready,
        "reason_codes": reasons,
        "stage4_release_gate": evaluation["release_gate"]["status"],
        "receipts": receipts,
        "operator_controls": controls,
        "totals": {
            "receipt_count": len(receipts),
            "issue_fix_result_count": issue_fix,
            "loopx_domain_ids": loopx_domains,
            "dispositions": {
                x: sum(r["application_disposition"] == x for r in receipts) for x in DISPOSITIONS
            },
            "latency_ms": sum(r["cost"]["latency_ms"] for r in receipts),
            "model_tokens": sum(r["cost"]["model_tokens"] for r in receipts),
            "provider_call_count": sum(r["cost"]["provider_call_count"] for r in receipts),
            "intervention_count": sum(r["intervention"]["count"] for r in receipts),
            "utility_observation_count": sum(1 for r in receipts if r["utility_observation"]),
        },
        "utility_counts_toward_readiness": False,
        "semantic_uplift_claim_allowed": False,
        "production_rollout_allowed": False,
        "external_writes_performed": False,
    }
