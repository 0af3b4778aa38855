"""Per-deployment retention: rows older than a policy's N days that no replay or audit
still needs are removed (docs/operators.md, "Retention").

Policies are ``settings.LOOPX_RETENTION_DAYS`` (``LOOPX_RETAIN_*_DAYS`` in the
environment; ``0`` keeps rows forever): ``receipts``, ``outbox``, ``dispatches`` and
``background_runs``. The kernel knows no app: each app registers its pruners on
``contributions.RETENTION`` as ``"<app>.<policy>"``; this module prunes the kernel's own
background runs (every finished run older than the cutoff except each task's newest, the
audit of "when did this last run"). ``enforce`` previews unless ``execute``; the beat
task ``loopx.core.retention`` runs it daily.
"""

import datetime as dt
from typing import Any

from django.conf import settings
from django.db import transaction

from loopx_site.core import clock, contributions
from loopx_site.core.errors import DomainError
from loopx_site.core.models import BackgroundRun

POLICIES = ("receipts", "outbox", "dispatches", "background_runs")


def policies() -> dict[str, int]:
    """The configured days per policy (``0``: kept forever)."""
    configured = getattr(settings, "LOOPX_RETENTION_DAYS", {}) or {}
    days = {name: int(configured.get(name, 0) or 0) for name in POLICIES}
    for name, value in days.items():
        if value < 0:
            raise DomainError(
                "invalid_argument", f"retention days of {name} must be 0 or more", field=name
            )
    return days


def describe() -> str:
    """One line for the admin: each policy and its days."""
    parts = [
        f"{name.replace('_', ' ')} {days} days" if days else f"{name.replace('_', ' ')} kept"
        for name, days in policies().items()
    ]
    return "Retention: " + ", ".join(parts) + " (LOOPX_RETAIN_*_DAYS)."


def prune_background_runs(*, policy: str, older_than: dt.datetime, execute: bool) -> dict:
    """Finished runs older than the cutoff, each task's newest run kept."""
    keep = {
        BackgroundRun.objects.filter(task=task)
        .order_by("-started_at", "-pk")
        .values_list("pk", flat=True)
        .first()
        for task in BackgroundRun.objects.values_list("task", flat=True).distinct()
    }
    due = (
        BackgroundRun.objects.filter(started_at__lt=older_than)
        .exclude(outcome="running")
        .exclude(pk__in=keep)
    )
    count = due.count()
    if execute and count:
        due.delete()
    return {"core.BackgroundRun": count}


def enforce(*, execute: bool = False, now: dt.datetime | None = None) -> dict[str, Any]:
    """Apply every policy with days > 0: ``{policy: {days, cutoff, removed: {table: n}}}``
    (``removed`` is what would go, in a preview)."""
    now = now or clock.now()
    report: dict[str, Any] = {"executed": execute, "policies": {}}
    for name, days in policies().items():
        entry: dict[str, Any] = {"days": days, "cutoff": None, "removed": {}}
        report["policies"][name] = entry
        if not days:
            continue
        cutoff = now - dt.timedelta(days=days)
        entry["cutoff"] = clock.iso(cutoff)
        pruners = [prune_background_runs] if name == "background_runs" else []
        pruners += [fn for key, fn in contributions.RETENTION if key.endswith("." + name)]
        for prune in pruners:
            with transaction.atomic():
                entry["removed"].update(prune(policy=name, older_than=cutoff, execute=execute))
    return report


def counts(report: dict[str, Any]) -> dict[str, int]:
    """The run row's numbers: rows removed per policy."""
    return {name: sum(entry["removed"].values()) for name, entry in report["policies"].items()}
