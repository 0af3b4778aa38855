"""Serve one async SDK exchange inside a sync WSGI request, on the request's own thread.

``run_here(coro_fn, …)`` runs the coroutine on a private event loop in the calling
thread. When a tool needs Django (``on_django_side(fn)``), ``fn`` runs right there, in
the same thread and the same task's context (the call's credential), while the loop is
*paused*: ``fn`` is a plain synchronous call inside one step of the task, so nothing else
runs on the loop until it returns, and for its duration the thread reports no running
loop — the ORM's async-safety check holds, and the request's connection and transaction
are the ones used. No thread is started or switched per request (``async_to_sync`` would
start one and hop between three), and the loop is not stopped and restarted around each
Django call, which keeps the MCP door within the API's latency.

Outside ``run_here`` (the stdio server, whose loop owns the main thread),
``on_django_side`` falls back to ``sync_to_async(thread_sensitive=True)``: one dedicated
thread for every Django call.
"""

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from asgiref.sync import sync_to_async

T = TypeVar("T")

#: The loop ``run_here`` is driving in this context (``None`` outside it).
_here: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar(
    "loopx_mcp_loop", default=None
)
_idle = threading.local()


def _loop() -> asyncio.AbstractEventLoop:
    """This thread's idle loop (kept between requests: building one costs a socket pair)."""
    loop = getattr(_idle, "loop", None)
    if loop is None or loop.is_closed():
        loop = _idle.loop = asyncio.new_event_loop()
    return loop


def run_here(coro_fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """Run ``coro_fn(*args)`` to completion on this thread's private loop."""
    loop = _loop()
    reset = _here.set(loop)  # copied into the task's context below
    try:
        return loop.run_until_complete(coro_fn(*args))
    finally:
        _here.reset(reset)
        _settle(loop)


def _settle(loop: asyncio.AbstractEventLoop) -> None:
    """Nothing of this request outlives it: cancel what is left (the loop stays idle)."""
    leftover = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in leftover:
        task.cancel()
    if leftover:
        loop.run_until_complete(asyncio.gather(*leftover, return_exceptions=True))


def _paused(loop: asyncio.AbstractEventLoop, fn: Callable[[], T]) -> T:
    """``fn()`` with ``loop`` paused: within this call the thread runs no loop."""
    asyncio._set_running_loop(None)
    try:
        return fn()
    finally:
        asyncio._set_running_loop(loop)


async def on_django_side(fn: Callable[[], T]) -> T:
    """Run sync Django code for a coroutine: in place with the loop paused under
    ``run_here``, else on asgiref's one thread-sensitive thread."""
    loop = asyncio.get_running_loop()
    if _here.get() is loop:
        return _paused(loop, fn)
    return await sync_to_async(fn, thread_sensitive=True)()
