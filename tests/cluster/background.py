"""The scenarios that kill processes: a settle killed before its dispatch (a worker
replays it; once more by worker1's prefork pool process), and one app instance + one
worker SIGKILLed mid-traffic."""

from __future__ import annotations

import json
import subprocess
import threading
import time

from tests.cluster import scenarios
from tests.cluster.client import Client
from tests.cluster.topology import PYTHON, ROOT, _children, wait_port


def _dispatch_ids(topo, turn: str) -> list[str]:
    out = topo.psql(
        "SELECT d.dispatch_id FROM hooks_hookdispatch d JOIN hooks_durablewritebackreceipt r "
        "ON d.receipt_id = r.id JOIN hooks_turnsettlement s ON r.settlement_id = s.id "
        f"WHERE s.turn_instance_id = '{turn}' ORDER BY d.dispatch_id",
        db="loopx",
    )
    return [line for line in out.splitlines() if line]


FAULT = {"LOOPX_HOOKS_FAULT": "after_primary_commit:kill"}


def _settle_cli(topo, todo: str, turn: str) -> int:
    """``turn settle --execute`` that SIGKILLs itself after its primary commit."""
    where = ["--goal-id", "demo", "--agent-id", "author", "--todo-id", todo]
    what = ["--turn-instance-id", turn, "--event-kind", "todo_completed", "--execute"]
    return topo.manage("turn", "settle", *where, *what, env_extra=FAULT).returncode


def _settle_api(topo, tokens, todo: str, turn: str) -> int:
    """The settle sent to an app instance whose gunicorn worker SIGKILLs itself after the
    primary commit: the host gets no answer (0). The instance is stopped afterwards."""
    app = topo.start_app("app3", **FAULT)
    try:
        if not wait_port(app.port, 60, app.popen):
            raise RuntimeError(f"app3 did not start:\n{app.tail()}")
        answer = Client(app.port, tokens["author"], "app3").post(
            scenarios.SETTLE, scenarios.settle_body(todo, turn)
        )
    finally:
        topo.kill("app3")
    return answer.status


def _replayed_by_a_worker(
    topo, tokens, todo: str, turn: str, seconds: float, before: list[str] | None = None
) -> dict:
    """``before``: the dispatch ids found right after the kill, when the caller has already
    asked a worker to replay it (otherwise looked up here)."""
    committed = scenarios.count(
        topo,
        "SELECT count(*) FROM hooks_durablewritebackreceipt r JOIN hooks_turnsettlement s ON "
        f"r.settlement_id = s.id WHERE s.turn_instance_id = '{turn}' AND r.state = 'committed'",
    )
    if before is None:
        before = _dispatch_ids(topo, turn)
    t0 = time.monotonic()
    replayed = []
    while time.monotonic() < t0 + seconds:
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
    failed_hooks = scenarios.hook_failures(topo, {turn})  # run by the worker's hook workers
    ok = committed == 1 and before == [] and replayed != [] and not failed_hooks
    ok &= after_wait == replayed == final == retried and len(set(final)) == len(final)
    return {
        "ok": ok,
        "committed_receipts": committed,
        "dispatches_before": len(before),
        "replayed_by_worker_after_s": round(waited, 1) if replayed else None,
        "dispatch_rows": len(final),
        "retry_same_ids": retried == final and bool(final),
        "hook_failures": failed_hooks,
    }


def killed_dispatch_replayed(topo, tokens, ids, seconds=60):
    """A settle killed between its primary commit and its hook phase (the hooks app's
    ``LOOPX_HOOKS_FAULT=after_primary_commit:kill``) — once as ``turn settle --execute``
    (the CLI process SIGKILLed), once through the API (the gunicorn worker of an extra
    instance, app3, SIGKILLed: the host got no answer): nothing dispatched. A worker's
    periodic recovery task dispatches it; the host's later retry of the settle returns
    the same dispatch ids; every row once, each receipt claimed by one worker once."""
    cases = {}
    todo = ids.todo()
    exit_status = _settle_cli(topo, todo, f"turn-killed-{todo}")
    cases["cli"] = {"exit": exit_status, **_replayed_by_a_worker(
        topo, tokens, todo, f"turn-killed-{todo}", seconds)}  # fmt: skip
    todo = ids.todo()
    status = _settle_api(topo, tokens, todo, f"turn-killed-{todo}")
    cases["api"] = {"answer": status, **_replayed_by_a_worker(
        topo, tokens, todo, f"turn-killed-{todo}", seconds)}  # fmt: skip
    claimed = scenarios.count(
        topo,
        "SELECT coalesce(sum((counts->>'claimed')::int), 0) FROM core_backgroundrun "
        "WHERE task = 'loopx.hooks.recover_dispatches'",
    )
    pids = {str(p.pid): p.name for p in topo.procs.values()}
    for proc in list(topo.procs.values()):  # worker1's prefork pool process runs its tasks
        pids.update({str(child): f"{proc.name}/pool" for child in _children(proc.pid)})
    workers = [
        pids.get(w.rsplit(":", 1)[-1], w)
        for w in topo.psql(
            "SELECT DISTINCT worker FROM core_backgroundrun WHERE task = "
            "'loopx.hooks.recover_dispatches' AND (counts->>'claimed')::int > 0",
            db="loopx",
        ).split()
    ]
    ok = cases["cli"].pop("ok") and cases["api"].pop("ok")
    ok &= cases["cli"]["exit"] == -9 and cases["api"]["answer"] == 0 and claimed == 2
    return ok, {**cases, "receipts_claimed_by_workers": claimed, "recovery_runs_by": workers}


def prefork_worker_replays(topo, tokens, ids, seconds=30):
    """A settle killed after its primary commit (``turn settle --execute``), replayed by
    worker1's *prefork* pool process: the recovery task goes to worker1's own queue at
    once (``grace_seconds=0``, ahead of beat's 3 s grace), so the hook runs in a hook
    worker forked by a Celery pool child (``LOOPX_HOOK_ISOLATION=worker``). The kill
    scenario's checks, plus: that run is the pool process's, it claimed the receipt, its
    hook dispatch did not fail."""
    todo = ids.todo()
    turn = f"turn-prefork-{todo}"
    sender = subprocess.Popen(  # loaded before the settle: sends the moment it is told
        [PYTHON, "-c", SEND_ON_LINE, "worker1", json.dumps({"limit": 50, "grace_seconds": 0})],
        cwd=ROOT,
        env=topo.app_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        exit_status = _settle_cli(topo, todo, turn)
        before = _dispatch_ids(topo, turn)  # nothing dispatched by the killed settle
        task_id = sender.communicate("send\n", timeout=60)[0].strip().splitlines()[-1]
    finally:
        if sender.poll() is None:
            sender.kill()
            sender.wait()
    case = _replayed_by_a_worker(topo, tokens, todo, turn, seconds, before=before)
    run = topo.psql(
        "SELECT worker, counts->>'claimed', outcome FROM core_backgroundrun "
        f"WHERE task_id = '{task_id}'",
        db="loopx",
    )
    worker, claimed, outcome = ([*run.split("|"), "", "", ""])[:3]
    pool = {str(child) for child in _children(topo.procs["worker1"].pid)}
    by_pool = worker.rsplit(":", 1)[-1] in pool
    ok = case.pop("ok") and exit_status == -9 and by_pool and claimed == "1" and outcome == "ok"
    return ok, {
        "exit": exit_status,
        **case,
        "run_by": "worker1/pool" if by_pool else worker,
        "claimed": claimed,
        "outcome": outcome,
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
    stats = topo.haproxy_stats()
    missing = traffic.readback()
    failed_hooks = scenarios.hook_failures(topo, {turn for turn, _ in traffic.acked["settle"]})
    late_errors = [s for t, s in traffic.errors_after if t > killed_at + 3.0]
    drained, broker = wait_drained(topo, task_ids, 60) if topo.celery else (True, {})
    acked = {k: len(v) for k, v in traffic.acked.items()}
    ok = (
        sum(missing.values()) == 0
        and survivor == {"app1"}
        and stats.get("app2", {}).get("status", "").startswith("DOWN")
        and not late_errors
        and drained
        and all(acked.values())
    )
    return ok, {
        "killed_pids": killed,
        "acked": acked,
        "missing": dict(missing),
        "hook_failures": failed_hooks,  # reported: a killed instance's settles are recovered
        "unanswered_then_retried": sum(
            v for k, v in traffic.statuses.items() if k.startswith("unanswered")
        ),
        "errors_3s_after_kill": len(late_errors),
        "served_by_before_kill": served_before,
        "served_by_after": sorted(survivor),
        "haproxy": {
            "app2_status": stats.get("app2", {}).get("status"),
            "retries": int(stats.get("BACKEND", {}).get("wretr") or 0),
            "redispatches": int(stats.get("BACKEND", {}).get("wredis") or 0),
        },
        "statuses": dict(traffic.statuses),
        "tasks_enqueued": len(task_ids),
        **broker,
    }


SEND = (
    "import json, sys; from loopx_site.celery import app; "
    "print(json.dumps([app.send_task('loopx.hooks.recover_dispatches', queue=sys.argv[2], "
    "kwargs=json.loads(sys.argv[3])).id for _ in range(int(sys.argv[1]))]))"
)


SEND_ON_LINE = (
    "import json, sys; from loopx_site.celery import app; sys.stdin.readline(); "
    "print(app.send_task('loopx.hooks.recover_dispatches', queue=sys.argv[1], "
    "kwargs=json.loads(sys.argv[2])).id, flush=True)"
)


def enqueue_tasks(topo, n: int, queue: str = "loopx", **kwargs) -> list[str]:
    """``n`` recovery tasks on the broker (as beat would send them, on ``queue``); their
    Celery ids."""
    run = topo.python("-c", SEND, str(n), queue, json.dumps({"limit": 50, **kwargs}))
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
