"""Metrics and spans of an executed semantic preference recall (``docs/operations.md``).

The same series as Reward Memory's recall, under ``area="preferences"``:
``loopx_recalls_total{area, corpus, status}``, ``loopx_recall_duration_seconds`` and
``loopx_provider_failures_total{area, kind}``. The ``corpus`` label is the registered
config's name (operators chose it); a recall of a config file or an in-process mapping
is ``-`` (its name is the caller's). Statuses: ``ok`` (items returned), ``empty``,
``provider_unavailable`` (fail open, or fail closed — then the error is re-raised after
it is counted) and ``disabled``. A preview (``execute`` false) and a refused request
(bad config, unknown surface) are not recalls and count nothing.
"""

from __future__ import annotations

import functools
import time
from typing import Any

from loopx_site.core import metrics, tracing
from preferences.models import SemanticPreferenceConfig
from preferences.recall.errors import SemanticPreferenceError

AREA = "preferences"


def _status(result: dict[str, Any]) -> str:
    if result.get("status") == "completed":
        return "ok" if result.get("items") else "empty"
    return str(result.get("status") or "-")


def _corpus(config: Any) -> str:
    return config.name if isinstance(config, SemanticPreferenceConfig) else "-"


def observed(recall):
    """Wrap the hook's ``recall(config, *, project, surface, execute, …)``."""

    @functools.wraps(recall)
    def wrapper(config, *, execute: bool = False, scope=None, **kwargs) -> dict[str, Any]:
        if not execute:
            return recall(config, execute=execute, scope=scope, **kwargs)
        started = time.perf_counter()
        with tracing.span(
            "preferences.recall",
            goal_digest=tracing.digest(getattr(scope, "goal_id", None)),
            agent_digest=tracing.digest(getattr(scope, "agent_id", None)),
            corpus=_corpus(config),
        ) as current:
            try:
                result = recall(config, execute=execute, scope=scope, **kwargs)
            except SemanticPreferenceError as error:
                kind = (getattr(error, "extra", None) or {}).get("failure_kind")
                if error.code == "provider_failed" and kind:
                    _count(config, "provider_unavailable", kind, started, current)
                raise
            _count(config, _status(result), result.get("failure_kind"), started, current)
        return result

    return wrapper


def _count(config, status: str, failure_kind: str | None, started: float, current) -> None:
    if current is not None:
        current.set_attribute("loopx.status", status)
        if failure_kind:
            current.set_attribute("loopx.failure_kind", failure_kind)
    if failure_kind:
        metrics.provider_failed(kind=failure_kind, area=AREA)
    metrics.recall_observed(
        area=AREA,
        corpus=_corpus(config),
        status=status,
        seconds=time.perf_counter() - started,
    )
