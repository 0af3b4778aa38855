"""Seed the cluster's database (run once, after ``migrate``, with the cluster's settings).

    python -m tests.cluster.seed TODOS

The demo (``loopx_demo``: Goal ``demo`` with Agents ``author`` / ``reviewer``, the
Reward Memory corpora and standing policies), Goal ``cluster`` with Agents ``c0``…``c15``,
``TODOS`` Todos ``cl-0``… of Goal ``demo`` (no validator) for the settles, and three host
tokens. Prints one JSON line for the harness (captured, never shown): ``tokens`` —
``cluster`` (Goal-wide), ``author`` (demo/author), ``throttle`` (the throttle scenario's
own) — and ``event``, the demo's turn-admission event (the shape the harness ingests).
"""

import json
import os
import sys


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "loopx_site.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from hooks import services as hooks_services
    from loopx_site.core import services as core

    todos = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    with open(os.devnull, "w") as quiet:
        call_command("loopx_demo", "--format", "json", stdout=quiet)
    core.register_goal(
        goal_id="cluster", agent_ids=[f"c{n}" for n in range(16)], state_ref="s", execute=True
    )
    for n in range(todos):
        hooks_services.add_todo(
            goal_id="demo",
            todo_id=f"cl-{n}",
            title=f"Cluster {n}",
            segment_ref="seg-cl",
            execute=True,
        )
    _fast_recovery()
    tokens = {
        "cluster": core.create_token(goal_id="cluster", label="cluster-leg").secret,
        "author": core.create_token(goal_id="demo", agent_id="author", label="leg").secret,
        "throttle": core.create_token(goal_id="cluster", label="cluster-throttle").secret,
    }
    from reward_memory.documents.demo import turn_event

    event = turn_event("cl-template", "template", "The operator chose this in the cluster leg.")
    print(json.dumps({"tokens": tokens, "event": event}))
    return 0


def _fast_recovery() -> None:
    """The hook-recovery schedule every 2 s (what an operator would edit in the admin):
    the leg waits seconds, not the default minute, for a worker to replay a settle."""
    from django.apps import apps

    if not apps.is_installed("django_celery_beat"):
        return
    from django_celery_beat.models import IntervalSchedule, PeriodicTask, PeriodicTasks

    every, _ = IntervalSchedule.objects.get_or_create(every=2, period=IntervalSchedule.SECONDS)
    PeriodicTask.objects.filter(task="loopx.hooks.recover_dispatches").update(
        interval=every, enabled=True
    )
    PeriodicTasks.update_changed()  # a bulk update sends no signal: tell beat


if __name__ == "__main__":
    sys.exit(main())
