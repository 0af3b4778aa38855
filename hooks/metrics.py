"""The hooks app's scrape-time state series (``loopx_site.core.metrics``), registered in
``HooksConfig.ready()`` on ``contributions.METRICS_GAUGES``: the intent outbox backlog
and its oldest row's age, and failed dispatches a replay could still run."""

from django.db.models import Min

from hooks.models import HookDispatch, HookIntent
from loopx_site.core import clock


def gauges() -> list[tuple[str, str, dict]]:
    pending = HookIntent.objects.filter(status=HookIntent.Status.PENDING)
    oldest = pending.aggregate(oldest=Min("created_at"))["oldest"]
    age = (clock.now() - oldest).total_seconds() if oldest else 0.0
    failed = HookDispatch.objects.filter(status=HookDispatch.Status.FAILED)
    return [
        ("loopx_outbox_pending", "Hook intents waiting in the outbox.", {(): pending.count()}),
        (
            "loopx_outbox_oldest_pending_age_seconds",
            "Age of the oldest pending hook intent (0 when none waits).",
            {(): max(0.0, age)},
        ),
        ("loopx_hook_dispatches_failed", "Failed hook dispatches on record.", {(): failed.count()}),
    ]
