"""The scenarios that kill processes: a settle killed before its dispatch (a worker
replays it), and one app instance + one worker SIGKILLed mid-traffic."""

from __future__ import annotations

import json
import threading
import time

from tests.cluster import scenarios
from tests.cluster.client import Client


def _dispatch_ids(topo, turn: str) -> list[str]:
    out = topo.psql(
        "SELECT d.dispatch_id FROM hooks_hookdispatch d JOIN hooks_durablewritebackreceipt r "
        "ON d.receipt_id = r.id JOIN hooks_turnsettlement s ON r.settlement_id = s.id "
        f"WHERE s.turn_instance_id = '{turn}' ORDER BY d.dispatch_id",
        db="loopx",
    )
    return [line for line in out.splitlines() if line]


def killed_dispatch_replayed(topo, tokens, ids, seconds=60):
    """``turn settle --execute`` SIGKILLed between its primary commit and its hook phase
    (the hooks app's ``LOOPX_HOOKS_FAULT=after_primary_commit:kill``): nothing dispatched.
    A worker's periodic replay task then dispatches it; the host's own retry of the
    settle returns the same receipt and the same dispatch ids, each row once."""
    todo = ids.todo()
    turn = f"turn-killed-{todo}"
    run = topo.manage(
        "turn",
        "settle",
        "--goal-id",
        "demo",
        "--agent-id",
        "author",
        "--todo-id",
        todo,
        "--turn-instance-id",
        turn,
        "--event-kind",
        "todo_completed",
        "--execute",
        env_extra={"LOOPX_HOOKS_FAULT": "after_primary_commit:kill"},
    )
    committed = scenarios.count(
        topo,
        "SELECT count(*) FROM hooks_durablewritebackreceipt r JOIN hooks_turnsettlement s ON "
        f"r.settlement_id = s.id WHERE s.turn_instance_id = '{turn}' AND r.state = 'committed'",
    )
    before = _dispatch_ids(topo, turn)
    deadline = time.monotonic() + seconds
    t0 = time.monotonic()
    replayed = []
    while time.monotonic() < deadline:
        replayed = _dispatch_ids(topo, turn)
        if replayed:
            break
        time.sleep(0.5)
    waited = time.monotonic() - t0
    time.sleep(1.0)  # a second replay (another worker, the next beat) would show here
    after_wait = _dispatch_ids(topo, turn)
    again = Client(topo.ports["haproxy"], tokens["author"]).post(
        scenarios.SETTLE, scenarios.settle_body(todo, turn)
    )
    retried = sorted(
        d["dispatch_id"] for d in again.body.get("hook_phase", {}).get("dispatches", [])
    )
    final = _dispatch_ids(topo, turn)
    claimed = scenarios.count(
        topo,
        "SELECT coalesce(sum((counts->>'claimed')::int), 0) FROM core_backgroundrun "
        "WHERE task = 'loopx.hooks.recover_dispatches'",
    )
    pids = {str(p.pid): p.name for p in topo.procs.values()}
    workers = [
        pids.get(w.rsplit(":", 1)[-1], w)
        for w in topo.psql(
            "SELECT DISTINCT worker FROM core_backgroundrun WHERE task = "
            "'loopx.hooks.recover_dispatches' AND (counts->>'claimed')::int > 0",
            db="loopx",
        ).split()
    ]
    ok = (
        run.returncode == -9
        and committed == 1
        and before == []
        and replayed != []
        and after_wait == replayed == final == retried
        and len(set(final)) == len(final)
        and claimed == 1
    )
    return ok, {
        "settle_exit": run.returncode,
        "committed_receipts": committed,
        "dispatches_before": len(before),
        "replayed_by_worker_after_s": round(waited, 1) if replayed else None,
        "dispatch_rows": len(final),
        "retry_same_ids": retried == final and bool(final),
        "retry_status": again.status,
        "receipts_claimed_by_workers": claimed,
        "recovery_runs_by": workers,
    }


def instance_and_worker_killed(topo, tokens, ids, seconds=12):
    """Traffic through HAProxy while app2 (gunicorn master and worker) and worker2 are
    SIGKILLed: every acknowledged write is read back, HAProxy routes to app1 after its
    health checks mark app2 down, and the broker queue drains (the killed worker's
    unacknowledged task is redelivered to the survivor)."""
    traffic = scenarios.Traffic(topo, tokens, ids)
    runner = threading.Thread(
        target=traffic.run, kwargs={"clients": 4, "requests": 400, "seconds": seconds}
    )
    runner.start()
    time.sleep(seconds / 3)
    task_ids = enqueue_tasks(topo, 8) if topo.celery else []  # both workers take these
    killed_at = time.monotonic()
    killed = {"app2": topo.kill("app2")}
    if topo.celery:
        killed["worker2"] = topo.kill("worker2")
        task_ids += enqueue_tasks(topo, 8)  # only the survivor is left to run these
    served_before = dict(traffic.served)
    runner.join()
    survivor = topo.served_by(6)
    missing = traffic.readback()
    late_errors = [s for t, s in traffic.errors_after if t > killed_at + 3.0]
    drained, broker = wait_drained(topo, task_ids, 60) if topo.celery else (True, {})
    acked = {k: len(v) for k, v in traffic.acked.items()}
    ok = (
        sum(missing.values()) == 0
        and survivor == {"app1"}
        and not late_errors
        and drained
        and all(acked.values())
    )
    return ok, {
        "killed_pids": killed,
        "acked": acked,
        "missing": dict(missing),
        "unanswered_then_retried": sum(
            v for k, v in traffic.statuses.items() if k.startswith("unanswered")
        ),
        "errors_3s_after_kill": len(late_errors),
        "served_by_before_kill": served_before,
        "served_by_after": sorted(survivor),
        "statuses": dict(traffic.statuses),
        "tasks_enqueued": len(task_ids),
        **broker,
    }


SEND = (
    "import json, sys; from loopx_site.celery import app; "
    "print(json.dumps([app.send_task('loopx.hooks.recover_dispatches', "
    "kwargs={'limit': 50}).id for _ in range(int(sys.argv[1]))]))"
)


def enqueue_tasks(topo, n: int) -> list[str]:
    """``n`` recovery tasks on the broker (as beat would send them); their Celery ids."""
    run = topo.python("-c", SEND, str(n))
    if run.returncode:
        raise RuntimeError(f"could not enqueue tasks: {run.stderr[-300:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def wait_drained(topo, task_ids: list[str], seconds: float) -> tuple[bool, dict]:
    """Every enqueued task ran to ``ok`` (its ``core.BackgroundRun`` row) and the broker
    holds nothing: the ``loopx`` queue is empty and no message is left unacknowledged."""
    listed = "','".join(task_ids)
    deadline = time.monotonic() + seconds
    figures: dict = {}
    while True:
        done = scenarios.count(
            topo,
            "SELECT count(DISTINCT task_id) FROM core_backgroundrun WHERE outcome = 'ok' "
            f"AND task_id IN ('{listed}')",
        )
        queued = int(topo.redis_cli("-n", "0", "LLEN", "loopx") or 0)
        unacked = int(topo.redis_cli("-n", "0", "HLEN", "unacked") or 0)
        figures = {"tasks_ran": done, "queued": queued, "unacked": unacked}
        if (done == len(task_ids) and queued == 0 and unacked == 0) or (
            time.monotonic() > deadline
        ):
            break
        time.sleep(0.5)
    figures["runs_left_running"] = scenarios.count(
        topo, "SELECT count(*) FROM core_backgroundrun WHERE outcome = 'running'"
    )  # a run the SIGKILL interrupted: its task ran again elsewhere (tasks_ran)
    return done == len(task_ids) and queued == 0 and unacked == 0, figures
