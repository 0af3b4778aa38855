"""Serve one async SDK exchange inside a sync WSGI request, on the request's own thread.

``run_here(coro_fn, …)`` runs the coroutine on a private event loop in the calling
thread. When a tool needs Django (``on_django_side(fn)``), the loop is *stopped*, ``fn``
runs in this same thread with no loop running (so the ORM's async-safety check holds and
the request's connection and transaction are the ones used), and the loop resumes with
its result. No thread is started or switched per request — ``async_to_sync`` would start
one and hop between three — which keeps the MCP door within the API's latency.

Outside ``run_here`` (the stdio server, whose loop owns the main thread),
``on_django_side`` falls back to ``sync_to_async(thread_sensitive=True)``: one dedicated
thread for every Django call.
"""

import asyncio
import collections
import contextvars
import functools
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from asgiref.sync import sync_to_async

T = TypeVar("T")


class _Driver:
    """The calls waiting for the loop to stop, and the future that stops it."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.calls: collections.deque = collections.deque()
        self.wake: asyncio.Future | None = None

    async def call(self, fn: Callable[[], T]) -> T:
        future = self.loop.create_future()
        # the caller's context (the call's credential) goes with it
        self.calls.append((functools.partial(contextvars.copy_context().run, fn), future))
        if self.wake is not None and not self.wake.done():
            self.wake.set_result(None)
        return await future

    def drain(self) -> None:
        while self.calls:
            fn, future = self.calls.popleft()
            try:
                value = fn()
            except Exception as exc:
                future.set_exception(exc)
            else:
                future.set_result(value)


_driver: contextvars.ContextVar[_Driver | None] = contextvars.ContextVar(
    "loopx_mcp_driver", default=None
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
    driver = _Driver(loop)
    reset = _driver.set(driver)  # copied into the task's context below
    try:
        task = loop.create_task(coro_fn(*args))
        while True:
            driver.wake = loop.create_future()
            loop.run_until_complete(
                asyncio.wait({task, driver.wake}, return_when=asyncio.FIRST_COMPLETED)
            )
            driver.drain()  # the loop is stopped: Django code may run here
            if task.done() and not driver.calls:
                return task.result()
    finally:
        _driver.reset(reset)
        _settle(loop)


def _settle(loop: asyncio.AbstractEventLoop) -> None:
    """Nothing of this request outlives it: cancel what is left (the loop stays idle)."""
    leftover = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in leftover:
        task.cancel()
    if leftover:
        loop.run_until_complete(asyncio.gather(*leftover, return_exceptions=True))


async def on_django_side(fn: Callable[[], T]) -> T:
    """Run sync Django code for a coroutine: between loop runs under ``run_here``, else
    on asgiref's one thread-sensitive thread."""
    driver = _driver.get()
    if driver is not None and driver.loop is asyncio.get_running_loop():
        return await driver.call(fn)
    return await sync_to_async(fn, thread_sensitive=True)()
