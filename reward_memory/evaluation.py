"""Stage 4: the evaluation harness and release gate (``reward_memory evaluate``).

Eight cases (``evaluation_cases``) run the real candidate, ingest, recall, application,
lifecycle and route guard code inside a rolled-back sandbox (``evaluation_fixtures``)
against a provider double. This module only orchestrates, measures and decides the gate:
``ready_for_bounded_dogfood`` when every case passes and provider writes during the
checked steps, persistent storage writes, false applications, maintainer interruptions
and user gates are all zero — never a production claim.
"""

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loopx_site.core.encoding import dumps
from reward_memory import evaluation_cases as cases
from reward_memory import evaluation_fixtures as fx
from reward_memory.models import LocalProviderDocument, MemoryRecord

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


def _run_case(case_id: str) -> dict[str, Any]:
    started = time.perf_counter_ns()
    failure = None
    before = _storage_rows()
    with fx.sandbox() as double:
        check = cases.Check(double)
        try:
            rows = cases.setup()
            cases.CASES[case_id](check, rows)
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
