"""Where a hook provider runs: a child process killed at its timeout, or a thread.

The fork-based machinery (children, kept workers, framing, killing and reaping, the
descriptor hygiene of a fresh child) is the engine ``loopx_site.engines.workers``
(its README). This module is the hooks' use of it:

``settings.LOOPX_HOOK_ISOLATION``:

* ``worker`` (default) — each hook's invocations run in a kept child forked from this
  process for that provider (``workers.run_in_worker``, the provider object is the
  owner: it is inherited, nothing is re-imported, no database is needed). A call costs
  no fork; a worker past the hook's ``timeout_ms``, or that dies, is killed and a fresh
  one is forked for the next call; kept workers are retired on any settings change
  (``setting_changed``) or a changed environment.
* ``process`` — a child is forked for every invocation and ends after its one answer
  (``workers.run_in_child``): nothing a provider does survives an invocation.
* ``thread`` — the provider runs on a daemon thread of this process. A hung provider
  cannot be stopped: it keeps its slot until it returns, so a few hung calls make later
  hooks fail with ``dispatch_budget_exhausted``. Kept for hosts without ``fork`` and as
  the baseline of the benchmark.

In a child the inherited database connections are let go (:func:`_detach_database`)
after the engine has pointed every inherited descriptor at ``/dev/null``; a provider
opens what it needs (a database connection, a file) inside ``produce``. A child's answer
is the provider's canonical result bytes or a failure tag from this module (never text
of the provider's own), so nothing a provider raises can travel to a receipt.

All models share :func:`produce` (call the provider, encode its result, apply the byte
budget) and one per-process bound on running invocations, :func:`worker_pool`
(``settings.LOOPX_HOOK_WORKERS``); a slot is held while an invocation runs (until its
answer, or its signal at the timeout). :func:`run` returns ``None`` when no slot is free;
the dispatcher records that as ``dispatch_budget_exhausted``.
"""

import json
import threading
from dataclasses import dataclass

from django.conf import settings
from django.core.signals import setting_changed

from hooks import errors as codes
from loopx_site.core.canonical import canonical_bytes
from loopx_site.engines import workers

DEFAULT_WORKERS = 4
KILL_GRACE_S = workers.KILL_GRACE_S


@dataclass(frozen=True)
class Produced:
    """What one invocation produced: canonical result bytes, or a failure code."""

    data: bytes | None = None
    code: str | None = None
    reason: str = ""


RAISED = Produced(code=codes.PRODUCER_FAILED, reason="provider_raised")
CRASHED = Produced(code=codes.PRODUCER_FAILED, reason="provider_crashed")
NOT_JSON = Produced(code=codes.RESULT_CONTRACT_REJECTED, reason="result:not_json")
OVER_BUDGET = Produced(code=codes.RESULT_CONTRACT_REJECTED, reason="result:byte_budget")
TIMED_OUT = Produced(code=codes.PRODUCER_TIMED_OUT, reason="timeout_ms_exceeded")

# A child reports a failure by one of these tags (the engine carries one byte).
_FAILURE_TAGS = {b"F": RAISED, b"J": NOT_JSON}
_TAG_OF = {produced: tag for tag, produced in _FAILURE_TAGS.items()}
_ENGINE_OUTCOMES = {
    workers.TIMED_OUT: TIMED_OUT,
    workers.CRASHED: CRASHED,
    workers.OVER_BUDGET: OVER_BUDGET,
}


def mode() -> str:
    return getattr(settings, "LOOPX_HOOK_ISOLATION", "worker")


def produce(provider, input_bytes: bytes, max_bytes: int) -> Produced:
    """Call the provider on a fresh copy of its input; never raises."""
    try:
        produced = provider.produce(json.loads(input_bytes))
    except BaseException:  # isolate everything a provider does; keep nothing of it
        return RAISED
    try:
        data = canonical_bytes(produced)
    except (TypeError, ValueError, RecursionError):
        return NOT_JSON
    if len(data) > max_bytes:
        return OVER_BUDGET
    return Produced(data=data)


def _work(provider) -> workers.Work:
    """What a child runs for ``provider``: :func:`produce`, as the engine's answer."""

    def work(input_bytes: bytes, max_bytes: int) -> workers.Answer:
        produced = produce(provider, input_bytes, max_bytes)
        if produced.data is not None:
            return workers.Answer(data=produced.data)
        if produced is OVER_BUDGET:
            return workers.OVER_BUDGET
        return workers.Answer(failure=_TAG_OF[produced])

    return work


def _produced(answer: workers.Answer) -> Produced:
    if answer.data is not None:
        return Produced(data=answer.data)
    if answer.failure is not None:
        return _FAILURE_TAGS.get(answer.failure, CRASHED)
    return _ENGINE_OUTCOMES.get(answer, CRASHED)


# -- the per-process bound -------------------------------------------------------------------
WorkerPool = workers.Slots

_pools: dict[int, WorkerPool] = {}
_pools_lock = threading.Lock()


def worker_pool() -> WorkerPool:
    """This process's pool for the configured size (one pool per distinct size)."""
    size = max(1, int(getattr(settings, "LOOPX_HOOK_WORKERS", DEFAULT_WORKERS)))
    with _pools_lock:
        pool = _pools.get(size)
        if pool is None:
            pool = _pools[size] = WorkerPool(size)
        return pool


# -- running one invocation ----------------------------------------------------------------
def run(
    provider, input_bytes: bytes, *, hook_id: str, timeout_s: float, max_bytes: int
) -> Produced | None:
    """Run one invocation under the configured isolation; ``None`` when no slot is free."""
    chosen = mode()
    if chosen == "thread":
        return _in_thread(provider, input_bytes, hook_id, timeout_s, max_bytes)
    pool = worker_pool()
    if not pool.try_acquire():
        return None
    try:
        limits = {"timeout_s": timeout_s, "max_bytes": max_bytes, "prepare": _detach_database}
        if chosen == "worker":
            answer = workers.run_in_worker(provider, _work(provider), input_bytes, **limits)
        else:
            answer = workers.run_in_child(_work(provider), input_bytes, **limits)
    finally:
        pool.release()
    return None if answer is None else _produced(answer)


def _in_thread(provider, input_bytes, hook_id, timeout_s, max_bytes) -> Produced | None:
    box: list[Produced] = []
    worker = worker_pool().try_start(
        lambda: box.append(produce(provider, input_bytes, max_bytes)),
        name=f"loopx-hook:{hook_id}",
    )
    if worker is None:
        return None
    worker.join(timeout_s)
    if worker.is_alive():
        return TIMED_OUT
    return box[0]


def reset() -> None:
    """Retire every idle kept worker (new ones are forked on demand). Called on every
    settings change (``setting_changed``) and by tests."""
    workers.reset()


_kept: list = []


def _detach_database() -> None:
    """In a child: forget the inherited database connections without closing them.

    A connection's socket is shared with the parent; using or closing it here would
    corrupt or end the parent's session. The objects are kept referenced (and the child
    leaves by ``os._exit``), so nothing is ever sent on them; a provider that queries
    anyway gets a connection of its own."""
    from django.db import connections

    for connection in connections.all(initialized_only=True):
        if connection.connection is not None:
            _kept.append(connection.connection)
            connection.connection = None


def _on_setting_changed(**kwargs) -> None:
    reset()


setting_changed.connect(_on_setting_changed, dispatch_uid="loopx-hook-workers")
